// Real-browser test of the explorer page (GET /): starts build/posenc-server
// on a free port, opens the page in Debian's Chromium through playwright-core
// and checks that the views are drawn from the server's numbers, that the
// canvases change with the controls, that the URL keeps the state, that
// 4096 positions x 1024 dimensions stay responsive, that nothing is logged
// as an error and that no request leaves for another host. Screenshots go to
// docs/screenshots/ (shown in the README).
//
//   make test-browser            (installs Chromium and playwright-core first)
//   SERVER=build/posenc-server CHROMIUM=/usr/bin/chromium node tests/browser/explorer.test.mjs
//
// Exit status 0 when every check passes.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const SERVER = process.env.SERVER || path.join(root, 'build/posenc-server');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SHOTS = process.env.SCREENSHOT_DIR || path.join(root, 'docs/screenshots');
const READY_MS = Number(process.env.READY_TIMEOUT_MS || 60000);

let passed = 0, failed = 0;
function check(ok, label, detail) {
  if (ok) { passed++; console.log(`ok   ${label}`); }
  else { failed++; console.log(`FAIL ${label}${detail ? ': ' + detail : ''}`); }
  return ok;
}

// ---------------------------------------------------------------- server
function startServer() {
  return new Promise((resolve, reject) => {
    const proc = spawn(SERVER, ['--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    const timer = setTimeout(() => reject(new Error(`server did not start in 20 s: ${out}${err}`)), 20000);
    proc.stdout.on('data', (b) => {
      out += b;
      const m = /posenc listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) { clearTimeout(timer); resolve({ proc, origin: m[1].replace(/\/$/, ''), log: () => err }); }
    });
    proc.stderr.on('data', (b) => { err += b; if (err.length > 1e6) err = err.slice(-5e5); });
    proc.on('error', (e) => { clearTimeout(timer); reject(e); });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited (${code}): ${err}`)); });
  });
}

// ---------------------------------------------------------------- page helpers

/* A .npy file (format 1.0, little-endian float64, C order) of a [rows][cols] array. */
function npyFloat64(values, rows, cols) {
  let header = `{'descr': '<f8', 'fortran_order': False, 'shape': (${rows}, ${cols}), }`;
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header.padEnd(total - 10 - 1, ' ') + '\n';
  const buf = Buffer.alloc(10 + header.length + 8 * values.length);
  Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]).copy(buf, 0);
  buf.writeUInt16LE(header.length, 8);
  buf.write(header, 10, 'latin1');
  values.forEach((v, i) => buf.writeDoubleLE(v, 10 + header.length + 8 * i));
  return buf;
}

/* A sinusoidal table [T][D] computed here: split layout or interleaved, from position `from`. */
function sinusoidalTable(T, D, split, from) {
  const rows = [];
  for (let p = 0; p < T; p++) {
    const row = new Array(D);
    for (let i = 0; i < D / 2; i++) {
      const a = (p + from) / Math.pow(10000, (2 * i) / D);
      row[split ? i : 2 * i] = Math.sin(a);
      row[split ? D / 2 + i : 2 * i + 1] = Math.cos(a);
    }
    rows.push(row);
  }
  return rows;
}

async function runCheck(page) {
  await page.evaluate(() => { document.body.dataset.check = ''; });
  await page.click('#k-run');
  await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.check), null,
    { timeout: READY_MS, polling: 50 });
  return {
    state: await page.evaluate(() => document.body.dataset.check),
    verdict: await page.textContent('#k-verdict'),
    findings: await page.textContent('#k-findings'),
    status: await page.textContent('#k-status'),
  };
}

async function waitReady(page, afterGeneration) {
  await page.waitForFunction((g) => {
    const b = document.body;
    return b && (b.dataset.status === 'ready' || b.dataset.status === 'error') &&
      Number(b.dataset.generation || 0) > g;
  }, afterGeneration, { timeout: READY_MS, polling: 50 });
  return page.evaluate(() => ({
    status: document.body.dataset.status,
    generation: Number(document.body.dataset.generation),
    errors: window.posencExplorer.errors,
    ms: window.posencExplorer.timings.last,
  }));
}
const generation = (page) => page.evaluate(() => Number(document.body.dataset.generation || 0));

/* Pixel statistics of a canvas: distinct colours, share of non-background
 * pixels and a hash of the whole bitmap. */
function canvasStats(page, id) {
  return page.evaluate((cid) => {
    const cv = document.getElementById(cid);
    if (!cv || !cv.width || !cv.height) return { width: 0, height: 0, colours: 0, inked: 0, hash: '' };
    const px = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
    const colours = new Set();
    let inked = 0, h1 = 0x811c9dc5, h2 = 0;
    for (let i = 0; i < px.length; i += 4) {
      const c = (px[i] << 16) | (px[i + 1] << 8) | px[i + 2];
      if (px[i + 3] !== 0 && c !== 0xffffff) inked++;
      if (colours.size < 5000) colours.add(c * 256 + px[i + 3]);
      h1 = Math.imul(h1 ^ c ^ (px[i + 3] << 24), 16777619) >>> 0;
      h2 = (h2 + c * (i + 1)) % 4294967291;
    }
    return { width: cv.width, height: cv.height, colours: colours.size, inked: inked / (px.length / 4), hash: `${h1}:${h2}` };
  }, id);
}

async function expectDrawn(page, id, label, minColours = 40, minInk = 0.05) {
  const s = await canvasStats(page, id);
  check(s.width > 100 && s.height > 50 && s.colours >= minColours && s.inked >= minInk,
    `${label}: canvas #${id} is drawn`,
    `${s.width}x${s.height}, ${s.colours} colours, ${(s.inked * 100).toFixed(1)}% inked`);
  return s;
}

// Timings vary from run to run; hiding them keeps the screenshots stable.
const SHOT_STYLE = '.status, #busy { visibility: hidden !important; }';
async function shot(page, file, selector) {
  mkdirSync(SHOTS, { recursive: true });
  const p = path.join(SHOTS, file);
  if (selector) await page.locator(selector).screenshot({ path: p, style: SHOT_STYLE, animations: 'disabled' });
  else await page.screenshot({ path: p, style: SHOT_STYLE, animations: 'disabled' });
  console.log(`     screenshot ${path.relative(root, p)} (${(statSync(p).size / 1024).toFixed(0)} KiB)`);
}

// ---------------------------------------------------------------- sections 7 and 8, restated
const COMP_HEX = ['#4e79a7', '#e15759', '#59a14f']; // the page's colours for t, h, w

/* The contract's slot assignment: the component (0 t, 1 h, 2 w) of slot j. */
function mropeComponent(style, [st, sh, sw], j) {
  if (style === 'chunked') return j < st ? 0 : j < st + sh ? 1 : 2;
  if (style === 'interleaved') return j % 3 === 1 && j < 3 * sh ? 1 : j % 3 === 2 && j < 3 * sw ? 2 : 0;
  return j < 2 * sh ? (j % 2 === 0 ? 1 : 2) : 0; // ernie
}

/* mm_layout's positions: text counts on; a block's tokens sit at (start +
 * frame, start + row, start + col) of its merged grid; the next start is one
 * past the largest so far ("qwen") or start + max(h, w)/merge ("hf"). */
function layoutPositions(layout, rule, merge) {
  const out = [];
  let start = 0, top = -1;
  for (const seg of layout) {
    if (rule === 'qwen') start = top + 1;
    if (seg.text) {
      for (let i = 0; i < seg.text; i++) out.push([start + i, start + i, start + i]);
      top = Math.max(top, start + seg.text - 1);
      start += seg.text;
      continue;
    }
    const [t, h, w] = seg.image || seg.video;
    for (let f = 0; f < t; f++) {
      for (let r = 0; r < h / merge; r++) {
        for (let c = 0; c < w / merge; c++) {
          out.push([start + f, start + r, start + c]);
          top = Math.max(top, start + f, start + r, start + c);
        }
      }
    }
    start += Math.max(h, w) / merge;
  }
  return out;
}

/* Which of row and column turns slot j of a variant (head_dim D). */
function vitBy(variant, D, j) {
  const first = j < D / 4;
  return (variant === 'qwen_vit' || variant === 'pixtral') === first ? 'row' : 'col';
}

/* cos of pixtral's slot j at (row, col): f_i = 10000^(-2i/D); slot j < D/4
 * turns by row·f_2j, slot D/4 + j by col·f_(2j+1). */
function pixtralCos(D, j, row, col) {
  const f = (i) => Math.pow(10000, -2 * i / D);
  return j < D / 4 ? Math.cos(row * f(2 * j)) : Math.cos(col * f(2 * (j - D / 4) + 1));
}

function pixelHex(page, id, x, y) {
  return page.evaluate(([cid, px, py]) => {
    const cv = document.getElementById(cid);
    const dpr = cv.width / cv.clientWidth;
    const d = cv.getContext('2d').getImageData(Math.round(px * dpr), Math.round(py * dpr), 1, 1).data;
    return '#' + [d[0], d[1], d[2]].map((v) => v.toString(16).padStart(2, '0')).join('');
  }, [id, x, y]);
}

async function postJson(origin, route, body) {
  const res = await fetch(origin + route, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  return res.json();
}

async function checkMultimodal(page, origin) {
  const sec = [2, 3, 3];
  const layout = [{ text: 3 }, { video: [3, 4, 4] }, { text: 2 }];
  await page.goto(origin + '/?mtext=3&mimg=3,4,4&mafter=2&merge=2&mrule=hf&msec=2,3,3&variant=pixtral&gh=6&gw=8&vhd=16');
  let r = await waitReady(page, 0);
  check(r.status === 'ready', 'multimodal URL: every view computed', JSON.stringify(r.errors));
  const answer = await postJson(origin, '/encode', {
    shape: [17, 16], scheme: 'rope', params: { head_dim: 16, mrope: { section: sec, style: 'chunked' } },
    mm_layout: layout, merge: 2, mm_rule: 'hf',
  });
  const want = layoutPositions(layout, 'hf', 2);
  check(JSON.stringify(answer.positions) === JSON.stringify(want), 'mm_layout (hf): the server\'s positions follow the rule restated here',
    JSON.stringify(answer.positions));
  let mm = await page.evaluate(() => window.posencExplorer.mm);
  check(JSON.stringify(mm.labels) === JSON.stringify(want.map((p) => p.join(','))) && mm.labelled,
    'section 7: every token cell is labelled with the (t, h, w) the server answered', JSON.stringify(mm.labels));
  for (const id of ['mm-tokens', 'mm-lines', 'mm-strips']) await expectDrawn(page, id, 'section 7', 3, 0.02);
  let wrong = [];
  for (const style of ['chunked', 'interleaved', 'ernie']) {
    const cells = mm.stripCells[style];
    if (!cells || cells.length !== 8) { wrong.push(`${style}: ${cells ? cells.length : 'no'} cells`); continue; }
    for (let j = 0; j < 8; j++) {
      const got = await pixelHex(page, 'mm-strips', cells[j].x - 9, cells[j].y - 10);
      const expect = COMP_HEX[mropeComponent(style, sec, j)];
      if (got !== expect) wrong.push(`${style} slot ${j}: ${got}, want ${expect}`);
    }
  }
  check(wrong.length === 0, 'section 7: each style\'s strip colours slot j by the component the contract assigns', wrong.join('; '));
  await shot(page, 'explorer-mrope.png', '#s-mm');

  // the rule control: qwen moves the text after the video on
  let g = await generation(page);
  await page.selectOption('#c-mrule', 'qwen');
  r = await waitReady(page, g);
  mm = await page.evaluate(() => window.posencExplorer.mm);
  const qwen = layoutPositions(layout, 'qwen', 2);
  check(r.status === 'ready' && JSON.stringify(mm.labels) === JSON.stringify(qwen.map((p) => p.join(','))) &&
    !new URL(page.url()).searchParams.has('mrule'), // qwen is the default
  'section 7: mm_rule → qwen redraws the positions of the rule (text after the video at 6, not 5)', mm.labels.slice(-2).join(' '));

  // section 8: pixtral's map, value by value, and each variant's row/column slots
  let vit = await page.evaluate(() => window.posencExplorer.vit);
  let worst = 0;
  vit.shown.forEach((j, t) => {
    for (let row = 0; row < 6; row++) {
      for (let col = 0; col < 8; col++) {
        worst = Math.max(worst, Math.abs(vit.data[t * 48 + row * 8 + col] - pixtralCos(16, j, row, col)));
      }
    }
  });
  check(vit.shown.length === 8 && worst < 2e-6, 'section 8: pixtral\'s frequency map equals cos(angle) restated here', `max error ${worst}`);
  await expectDrawn(page, 'vit-map', 'section 8', 40, 0.2);
  await shot(page, 'explorer-rope2d.png', '#s-vit');
  for (const variant of ['pixtral', 'qwen_vit', 'llama4_vision', 'gemma4_vision']) {
    g = await generation(page);
    if (variant !== 'pixtral') {
      await page.selectOption('#c-variant', variant);
      r = await waitReady(page, g);
    }
    vit = await page.evaluate(() => window.posencExplorer.vit);
    const expect = Array.from({ length: 8 }, (_, j) => vitBy(variant, 16, j));
    check(vit.variant === variant && JSON.stringify(vit.by) === JSON.stringify(expect),
      `section 8: ${variant} turns slots by ${expect.join(' ')}`, JSON.stringify(vit.by));
  }
  check(new URL(page.url()).searchParams.get('variant') === 'gemma4_vision', 'section 8: the URL keeps the variant', page.url());
}

// ---------------------------------------------------------------- main
async function main() {
  const server = await startServer();
  const origin = server.origin;
  const host = new URL(origin).host;
  console.log(`# server ${origin}, browser ${CHROMIUM}`);

  // The page as served: one self-contained HTML document.
  const res = await fetch(origin + '/');
  const html = await res.text();
  check(res.status === 200, 'GET / answers 200', String(res.status));
  check(/^text\/html/.test(res.headers.get('content-type') || ''), 'GET / is text/html', res.headers.get('content-type'));
  check(!/(?:src|href)\s*=\s*["']?(?:https?:)?\/\//i.test(html) && !/url\(\s*["']?(?:https?:)?\/\//i.test(html) &&
    !/@import/i.test(html) && !/<script[^>]+src=/i.test(html) && !/<link[^>]+stylesheet/i.test(html),
  'GET / references no external script, style, font or image');
  check(html.includes('<canvas id="heatmap"'), 'GET / holds the heatmap canvas');

  const profile = mkdtempSync(path.join(tmpdir(), 'posenc-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 900 },
    deviceScaleFactor: 1,
  });
  const foreign = [], consoleErrors = [], failedRequests = [], badResponses = [], seen = [];
  await context.route('**', (route) => {
    const u = new URL(route.request().url());
    if ((u.protocol === 'http:' || u.protocol === 'https:') && u.host === host) return route.continue();
    foreign.push(route.request().url());
    return route.abort('blockedbyclient');
  });
  context.on('request', (r) => seen.push(r.url()));
  context.on('requestfailed', (r) => {
    const f = r.failure() ? r.failure().errorText : '';
    if (!/ERR_ABORTED/.test(f)) failedRequests.push(`${r.url()} ${f}`); // aborts: superseded views
  });
  context.on('response', (r) => { if (r.status() >= 400) badResponses.push(`${r.status()} ${r.url()}`); });
  const page = context.pages()[0] || await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(`uncaught: ${e.message}`));

  try {
    // 1. The default view: the classic 100 x 64 sinusoidal table.
    await page.goto(origin + '/');
    let r = await waitReady(page, 0);
    check(r.status === 'ready' && r.errors.length === 0, 'default view: every section computed', JSON.stringify(r.errors));
    const heat0 = await expectDrawn(page, 'heatmap', 'default view', 100, 0.4);
    for (const id of ['lines', 'ladder', 'rope-circle', 'rope-dot', 'alibi-grid', 't5-grid', 'sim']) {
      await expectDrawn(page, id, 'default view', 20, 0.02);
    }
    const caption = await page.textContent('#table-caption');
    check(/100 positions × 64 dimensions/.test(caption), 'default view: the caption names 100 positions × 64 dimensions', caption);
    await shot(page, 'explorer-table.png');

    // 2. A control changes the heatmap, and the URL keeps it.
    let g = await generation(page);
    await page.selectOption('#c-scheme', 'rope');
    r = await waitReady(page, g);
    check(r.status === 'ready', 'scheme → rope: computed', JSON.stringify(r.errors));
    const heat1 = await canvasStats(page, 'heatmap');
    check(heat1.hash !== heat0.hash, 'scheme → rope: heatmap pixels change');
    g = await generation(page);
    await page.fill('#c-d', '128');
    await page.press('#c-d', 'Tab');
    r = await waitReady(page, g);
    const heat2 = await canvasStats(page, 'heatmap');
    check(r.status === 'ready' && heat2.hash !== heat1.hash, 'd_model → 128: heatmap pixels change');
    g = await generation(page);
    await page.selectOption('#c-layout', 'interleaved');
    r = await waitReady(page, g);
    const heat3 = await canvasStats(page, 'heatmap');
    check(r.status === 'ready' && heat3.hash !== heat2.hash, 'layout → interleaved: heatmap pixels change');
    const url = page.url();
    const q = new URL(url).searchParams;
    check(q.get('scheme') === 'rope' && q.get('d') === '128' && q.get('layout') === 'interleaved',
      'the URL keeps the state', url);
    await page.goto(url);
    r = await waitReady(page, 0);
    const again = await canvasStats(page, 'heatmap');
    const ctl = await page.evaluate(() => [document.getElementById('c-scheme').value,
      document.getElementById('c-d').value, document.getElementById('c-layout').value]);
    check(ctl.join() === 'rope,128,interleaved', 'a shared URL restores the controls', ctl.join());
    check(again.hash === heat3.hash, 'a shared URL redraws the same heatmap');

    // 3. RoPE with scaling: the screenshot of the rotation and q.k views.
    g = await generation(page);
    await page.click('[data-preset="yarn"]');
    r = await waitReady(page, g);
    check(r.status === 'ready', 'preset YaRN × 4: computed', JSON.stringify(r.errors));
    const dot = await expectDrawn(page, 'rope-dot', 'YaRN', 20, 0.02);
    const gap = await page.textContent('#rope-caption');
    check(/dashed curves lie on the solid ones/.test(gap), 'RoPE: the q·k caption reports the shift test', gap.slice(0, 120));
    await page.locator('#s-rope').scrollIntoViewIfNeeded();
    await shot(page, 'explorer-rope.png', '#s-rope');

    // 4. ALiBi and T5 as the main scheme.
    for (const preset of ['alibi', 't5']) {
      const before = await canvasStats(page, 'heatmap');
      g = await generation(page);
      await page.click(`[data-preset="${preset}"]`);
      r = await waitReady(page, g);
      const after = await canvasStats(page, 'heatmap');
      check(r.status === 'ready' && after.hash !== before.hash, `preset ${preset}: the heatmap shows its bias`,
        JSON.stringify(r.errors));
    }
    g = await generation(page);
    const headBefore = await canvasStats(page, 'heatmap');
    await page.fill('#c-head', '5');
    await page.press('#c-head', 'Tab');
    r = await waitReady(page, g);
    const headAfter = await canvasStats(page, 'heatmap');
    check(r.status === 'ready' && headAfter.hash !== headBefore.hash, 'head → 5: the T5 heatmap changes');
    await page.locator('#s-bias').scrollIntoViewIfNeeded();
    await shot(page, 'explorer-bias.png', '#s-bias');

    // 5. The similarity view, both measures.
    g = await generation(page);
    const simBefore = await canvasStats(page, 'sim');
    await page.selectOption('#c-sim', 'scores');
    r = await waitReady(page, g);
    const simAfter = await canvasStats(page, 'sim');
    check(r.status === 'ready' && simAfter.hash !== simBefore.hash && simAfter.colours > 20,
      'similarity → /apply scores: redrawn', JSON.stringify(r.errors));

    // 5b. Check my encoding: a split-layout table pasted as JSON, then a
    // float64 .npy file of an interleaved table that starts at position 1.
    await page.locator('#s-check').scrollIntoViewIfNeeded();
    await page.selectOption('#k-kind', 'table');
    await page.fill('#k-text', JSON.stringify(sinusoidalTable(64, 16, true, 0)));
    let ck = await runCheck(page);
    check(ck.state === 'ready' && ck.verdict === 'explained' && /layout_swapped/.test(ck.findings),
      'check my encoding: a pasted split table is explained by layout_swapped', `${ck.verdict} ${ck.findings.slice(0, 160)} ${ck.status}`);
    const mapClaim = await canvasStats(page, 'k-map-claim'), mapBest = await canvasStats(page, 'k-map-best');
    check(mapClaim.colours > 10 && mapBest.inked > 0 && mapClaim.hash !== mapBest.hash,
      'check my encoding: the error maps under the claim and under best are drawn and differ',
      JSON.stringify([mapClaim.colours, mapBest.inked]));
    await page.fill('#k-text', '');
    const flat = sinusoidalTable(48, 16, false, 1).flat();
    await page.setInputFiles('#k-file', { name: 'pe.npy', mimeType: 'application/octet-stream', buffer: npyFloat64(flat, 48, 16) });
    await page.waitForFunction(() => /loaded/.test(document.getElementById('k-status').textContent), null, { timeout: 5000 });
    ck = await runCheck(page);
    check(ck.state === 'ready' && ck.verdict === 'explained' && /position_offset/.test(ck.findings) && /\+1/.test(ck.findings),
      'check my encoding: a dropped float64 .npy table from position 1 gives position_offset +1', `${ck.verdict} ${ck.findings.slice(0, 160)} ${ck.status}`);
    await shot(page, 'explorer-check.png', '#s-check');

    // 6. 4096 positions x 1024 dimensions, and the page stays responsive.
    await page.goto(origin + '/?n=4096&d=1024');
    await page.evaluate(() => {
      window.__longest = 0;
      new PerformanceObserver((l) => {
        for (const e of l.getEntries()) window.__longest = Math.max(window.__longest, e.duration);
      }).observe({ type: 'longtask', buffered: true });
    });
    r = await waitReady(page, 0);
    const big = await expectDrawn(page, 'heatmap', '4096 × 1024', 100, 0.4);
    const bigCaption = await page.textContent('#table-caption');
    check(/4096 positions × 1024 dimensions/.test(bigCaption), '4096 × 1024: the table has that shape', bigCaption.slice(0, 80));
    const longest = await page.evaluate(() => window.__longest);
    console.log(`     4096 × 1024: every view in ${r.ms.toFixed(0)} ms, longest main-thread task ${longest.toFixed(0)} ms`);
    check(r.status === 'ready' && r.ms < 20000, '4096 × 1024: every view computed and drawn in under 20 s', `${r.ms} ms`);
    check(longest < 2500, '4096 × 1024: no main-thread task blocks for 2.5 s or more', `${longest.toFixed(0)} ms`);
    // and it still reacts: change the base, expect a new picture quickly
    g = await generation(page);
    const t1 = Date.now();
    await page.fill('#c-base', '500');
    await page.press('#c-base', 'Tab');
    r = await waitReady(page, g);
    const big2 = await canvasStats(page, 'heatmap');
    check(r.status === 'ready' && big2.hash !== big.hash, `4096 × 1024: base → 500 redraws (${Date.now() - t1} ms)`);

    // 6b. Multimodal RoPE and the vision encoders' 2-D RoPE (sections 7 and 8).
    await checkMultimodal(page, origin);

    // 7. The whole session.
    check(consoleErrors.length === 0, 'no console errors', consoleErrors.slice(0, 5).join(' | '));
    check(foreign.length === 0, 'no request to any other host', foreign.slice(0, 5).join(' '));
    check(seen.every((u) => new URL(u).host === host || u.startsWith('data:')),
      `every one of ${seen.length} requests went to ${host}`);
    check(failedRequests.length === 0, 'no failed request', failedRequests.slice(0, 5).join(' | '));
    check(badResponses.length === 0, 'no 4xx/5xx response', badResponses.slice(0, 5).join(' | '));
    check(seen.some((u) => u.endsWith('/encode')) && seen.some((u) => u.endsWith('/apply')) &&
      seen.some((u) => u.endsWith('/info')) && seen.some((u) => u.endsWith('/diagnose')),
      'the page called /encode, /apply, /diagnose and /info');

    // 8. The guard itself: a request to another host is seen and stopped.
    const probe = await context.newPage();
    await probe.goto('about:blank');
    await probe.evaluate(() => fetch('http://192.0.2.1:9/probe').catch(() => null));
    check(foreign.some((u) => u.startsWith('http://192.0.2.1:9/')), 'the foreign-request guard catches a request to another host');
    await probe.close();
    void dot;
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
    server.proc.kill('SIGTERM');
  }
  console.log(`browser: ${passed} passed, ${failed} failed`);
  if (failed && server.log()) console.log(`--- server stderr (tail)\n${server.log().slice(-2000)}`);
  process.exitCode = failed ? 1 : 0;
}

main().catch((e) => {
  console.error(`browser test error: ${e && e.stack ? e.stack : e}`);
  process.exitCode = 1;
});
