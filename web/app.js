/*
 * posenc explorer: draws what this server computes. Every array shown comes
 * from POST /encode or POST /apply of the server that served the page,
 * fetched as base64 float32 and drawn on canvases. No libraries, no other
 * hosts. The state lives in the query string (history.replaceState).
 */
'use strict';
(function () {

// ---------------------------------------------------------------- limits
const MAX_N = 8192, MAX_D = 2048, MAX_HEADS = 64;
const MAX_CELLS = 1 << 23;   // length x d_model of the table (32 MiB of float32)
const BIAS_MAX = 512;       // positions in the large bias heatmap (heads x N x N)
const TILE_MAX = 256;       // positions in the per-head tiles
const SIM_MAX = 512;        // positions in the similarity matrix
const ROPE_MAX = 512;       // offsets in the q.k plot
const ROPE_FLOATS = 1 << 20; // cap on the q/k upload, in floats
const ROT_POINTS = 48;      // positions drawn on the rotating pair
const SHIFT = 10000;        // second absolute position for the q.k plot

const SCHEMES = ['sinusoidal', 'rope', 'alibi', 't5'];
const LAYOUTS = { sinusoidal: ['interleaved', 'split'], rope: ['half', 'interleaved'] };
const SCALINGS = ['none', 'linear', 'dynamic', 'yarn', 'llama3'];
const VARIANTS = ['qwen_vit', 'pixtral', 'llama4_vision', 'gemma4_vision'];

const DEFAULTS = {
  scheme: 'sinusoidal', n: 100, d: 64, base: 10000, layout: '',
  scaling: 'none', factor: 4, omax: 2048, heads: 8, head: 0,
  dims: '', pair: -1, qk: 'same', form: 'symmetric', model: 'default', sim: 'cosine',
  mtext: 3, mimg: '1,8,12', mafter: 4, merge: 2, mrule: 'qwen', msec: '2,3,3',
  variant: 'qwen_vit', gh: 8, gw: 12, vhd: 32,
};
const KEYS = Object.keys(DEFAULTS);

const PRESETS = {
  classic: { scheme: 'sinusoidal', n: 100, d: 64, base: 10000, layout: '', scaling: 'none', dims: '' },
  big: { n: 4096, d: 1024, dims: '' },
  llama3: { scheme: 'rope', n: 4096, d: 128, base: 500000, layout: 'half', scaling: 'llama3', factor: 8, omax: 8192, dims: '' },
  yarn: { scheme: 'rope', n: 4096, d: 128, base: 10000, layout: 'half', scaling: 'yarn', factor: 4, omax: 1024, dims: '' },
  alibi: { scheme: 'alibi', n: 256, heads: 8, head: 0 },
  t5: { scheme: 't5', n: 256, heads: 8, head: 0 },
};

const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#59a14f', '#b07aa1', '#9c755f',
  '#76b7b2', '#edc948', '#ff9da7', '#bab0ac'];

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------- state
function clampInt(v, lo, hi, dflt) {
  const x = Math.round(Number(v));
  return Number.isFinite(x) ? Math.min(hi, Math.max(lo, x)) : dflt;
}
function clampNum(v, lo, hi, dflt) {
  const x = Number(v);
  return Number.isFinite(x) ? Math.min(hi, Math.max(lo, x)) : dflt;
}
function oneOf(v, list, dflt) { return list.includes(v) ? v : dflt; }

/* A complete, valid state from loose input (URL or controls). */
function normalize(raw) {
  const s = {};
  s.scheme = oneOf(raw.scheme, SCHEMES, DEFAULTS.scheme);
  s.n = clampInt(raw.n, 2, MAX_N, DEFAULTS.n);
  s.d = clampInt(raw.d, 2, MAX_D, DEFAULTS.d);
  s.n = Math.min(s.n, Math.max(2, Math.floor(MAX_CELLS / s.d)));
  s.base = clampNum(raw.base, 1.0001, 1e9, DEFAULTS.base);
  s.layout = typeof raw.layout === 'string' ? raw.layout : '';
  s.scaling = oneOf(raw.scaling, SCALINGS, 'none');
  s.factor = clampNum(raw.factor, 1, 1024, DEFAULTS.factor);
  s.omax = clampInt(raw.omax, 1, 1e8, DEFAULTS.omax);
  s.heads = clampInt(raw.heads, 1, MAX_HEADS, DEFAULTS.heads);
  s.head = clampInt(raw.head, 0, s.heads - 1, 0);
  s.dims = typeof raw.dims === 'string' ? raw.dims.replace(/[^0-9,]/g, '') : '';
  s.pair = clampInt(raw.pair, -1, Math.max(0, Math.floor(ropeDim(s.d) / 2) - 1), -1); // -1: auto
  s.qk = oneOf(raw.qk, ['random', 'same', 'ones'], DEFAULTS.qk);
  s.form = oneOf(raw.form, ['symmetric', 'bloom'], DEFAULTS.form);
  s.model = typeof raw.model === 'string' && raw.model ? raw.model.slice(0, 200) : DEFAULTS.model;
  s.sim = oneOf(raw.sim, ['cosine', 'scores'], DEFAULTS.sim);
  normalizeVision(raw, s);
  return s;
}

/* Sections 7 and 8: the layout (text, one image or video, text), the mrope
 * section and the 2-D grid; h and w of the image are multiples of merge. */
function normalizeVision(raw, s) {
  s.mtext = clampInt(raw.mtext, 0, 256, DEFAULTS.mtext);
  s.mafter = clampInt(raw.mafter, 0, 256, DEFAULTS.mafter);
  s.merge = clampInt(raw.merge, 1, 8, DEFAULTS.merge);
  s.mrule = oneOf(raw.mrule, ['qwen', 'hf'], DEFAULTS.mrule);
  const img = intTriple(raw.mimg, intTriple(DEFAULTS.mimg));
  const side = (v) => Math.min(64 - 64 % s.merge, Math.max(s.merge, Math.round(v / s.merge) * s.merge));
  const frames = Math.max(1, Math.min(16, img[0]));
  s.mimg = [frames, side(img[1]), side(img[2])].join(',');
  const sec = intTriple(raw.msec, intTriple(DEFAULTS.msec)).map((v) => Math.max(1, Math.min(64, v)));
  s.msec = sec.join(',');
  s.variant = oneOf(raw.variant, VARIANTS, DEFAULTS.variant);
  s.gh = clampInt(raw.gh, 1, 64, DEFAULTS.gh);
  s.gw = clampInt(raw.gw, 1, 64, DEFAULTS.gw);
  s.vhd = Math.max(8, Math.min(256, Math.round(clampInt(raw.vhd, 8, 256, DEFAULTS.vhd) / 4) * 4));
}
/* "a,b,c" as three non-negative integers, else dflt. */
function intTriple(text, dflt) {
  const v = String(text || '').split(',').map((x) => Number(x.trim()));
  return v.length === 3 && v.every((x) => Number.isInteger(x) && x >= 0) ? v : dflt;
}
function tableLayout(s) {
  const opts = LAYOUTS[s.scheme] || LAYOUTS.sinusoidal;
  return opts.includes(s.layout) ? s.layout : opts[0];
}
function ropeDim(d) { return d - (d % 2); }
/* The pair the rotation view shows: the chosen one, or by default the one
 * whose unscaled wavelength is nearest ROT_POINTS / 2 (two clear turns). */
function ropePair(s) {
  const hd = ropeDim(s.d);
  if (s.pair >= 0) return Math.min(s.pair, hd / 2 - 1);
  const k = Math.round(Math.log(ROT_POINTS / 2 / (2 * Math.PI)) / Math.log(s.base) * hd / 2);
  return Math.max(0, Math.min(hd / 2 - 1, k));
}

function stateFromURL() {
  const q = new URLSearchParams(location.search);
  const raw = Object.assign({}, DEFAULTS);
  for (const k of KEYS) if (q.has(k)) raw[k] = q.get(k);
  return normalize(raw);
}
function stateToQuery(s) {
  const q = new URLSearchParams();
  for (const k of KEYS) if (String(s[k]) !== String(DEFAULTS[k])) q.set(k, String(s[k]));
  const t = q.toString();
  return t ? '?' + t : location.pathname;
}

let state = stateFromURL();

// ---------------------------------------------------------------- controls
const NUMERIC = ['n', 'd', 'base', 'factor', 'omax', 'heads', 'head', 'pair', 'mtext', 'mafter',
  'merge', 'gh', 'gw', 'vhd'];

function syncControls() {
  const s = state;
  const lay = $('c-layout');
  const opts = LAYOUTS[s.scheme];
  lay.replaceChildren(...(opts || ['n/a']).map((o) => new Option(o, o)));
  lay.disabled = !opts;
  if (opts) lay.value = tableLayout(s);
  for (const k of ['scheme', 'n', 'd', 'base', 'scaling', 'factor', 'omax', 'heads', 'head',
    'dims', 'pair', 'qk', 'form', 'sim', 'mtext', 'mimg', 'mafter', 'merge', 'mrule', 'msec',
    'variant', 'gh', 'gw', 'vhd']) {
    const el = $('c-' + k);
    if (el && document.activeElement !== el) el.value = String(s[k]);
  }
  $('c-head').max = String(s.heads - 1);
  $('c-pair').max = String(Math.max(0, ropeDim(s.d) / 2 - 1));
  $('c-pair').value = String(ropePair(s));
  $('pair-out').textContent = ropePair(s) + (s.pair < 0 ? ' (auto)' : '');
  const scaled = s.scaling !== 'none';
  $('c-factor').disabled = !scaled;
  $('c-omax').disabled = !scaled || s.scaling === 'linear';
  const ms = $('c-model');
  if (ms.options.length) ms.value = s.model;
  $('dims-row').hidden = !(s.scheme === 'sinusoidal' || s.scheme === 'rope');
  $('share').href = stateToQuery(s);
}

function setState(patch) {
  const next = normalize(Object.assign({}, state, patch));
  state = next;
  history.replaceState(null, '', stateToQuery(state));
  syncControls();
  scheduleLoad();
}

function bindControls() {
  $('controls').addEventListener('submit', (e) => e.preventDefault());
  for (const k of KEYS) {
    const el = $('c-' + k);
    if (!el) continue;
    const ev = el.type === 'range' ? 'input' : 'change';
    el.addEventListener(ev, () => {
      const v = NUMERIC.includes(k) ? Number(el.value) : el.value;
      if (NUMERIC.includes(k) && el.value === '') { syncControls(); return; }
      const patch = { [k]: v };
      if (k === 'scheme') patch.dims = '';
      setState(patch);
    });
  }
  $('c-layout').addEventListener('change', () => setState({ layout: $('c-layout').value, dims: '' }));
  for (const b of document.querySelectorAll('[data-preset]')) {
    b.addEventListener('click', () => setState(PRESETS[b.dataset.preset]));
  }
}

// ---------------------------------------------------------------- HTTP
class ApiError extends Error {}

function b64ToF32(b64) {
  let bytes;
  if (typeof Uint8Array.fromBase64 === 'function') {
    bytes = Uint8Array.fromBase64(b64);
  } else {
    const s = atob(b64);
    bytes = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  }
  // The wire format is little-endian float32; so is every browser's platform.
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length >> 2);
}
function f32ToB64(arr) {
  const bytes = new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
  if (typeof bytes.toBase64 === 'function') return bytes.toBase64();
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

const cache = new Map(); // key -> {p, bytes, signal}; least recently used first
const CACHE_ENTRIES = 16, CACHE_BYTES = 160e6;

function trimCache() {
  let total = 0;
  for (const e of cache.values()) total += e.bytes;
  for (const [k, e] of cache) {
    if (cache.size <= 1 || (cache.size <= CACHE_ENTRIES && total <= CACHE_BYTES)) break;
    cache.delete(k);
    total -= e.bytes;
  }
}

/* Throws an AbortError when a newer state has superseded this load. */
function live(signal) {
  if (signal.aborted) throw new DOMException('superseded', 'AbortError');
}

/* POST path with body; resolves to {json, ms, bytes}. Errors carry the
 * server's message. Results are cached by `key` (a short description of
 * everything in the body). */
function post(path, body, key, signal) {
  const k = path + ' ' + key;
  const hit = cache.get(k);
  if (hit && !hit.signal.aborted) {
    cache.delete(k);
    cache.set(k, hit);
    return hit.p;
  }
  const p = (async () => {
    const t0 = performance.now();
    const res = await fetch(path, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body), signal,
    });
    const text = await res.text();
    let json = null;
    try { json = JSON.parse(text); } catch (e) { /* reported below */ }
    if (!res.ok) {
      const msg = json && json.error ? `${json.error.code}: ${json.error.message}` : text.slice(0, 200);
      throw new ApiError(`${path} answered ${res.status} (${msg})`);
    }
    if (!json) throw new ApiError(`${path} answered unreadable JSON`);
    return { json, ms: performance.now() - t0, bytes: text.length };
  })();
  const entry = { p, bytes: 0, signal };
  cache.set(k, entry);
  p.then((r) => { entry.bytes = r.bytes; entry.signal = { aborted: false }; trimCache(); },
    () => { if (cache.get(k) === entry) cache.delete(k); });
  trimCache();
  return p;
}

/* The request body as shown to the reader: long base64 strings shortened. */
function showRequest(id, path, body) {
  const txt = JSON.stringify(body, (k, v) =>
    (typeof v === 'string' && v.length > 80) ? `${v.slice(0, 40)}… (${v.length} base64 chars)` : v, 1);
  $(id).textContent = `POST ${path}\n${txt.length > 6000 ? txt.slice(0, 6000) + '\n…' : txt}`;
}

function kb(bytes) {
  return bytes > 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${(bytes / 1e3).toFixed(1)} kB`;
}

// ---------------------------------------------------------------- colour
function lut(stops) {
  const out = new Uint8Array(256 * 3);
  const rgb = stops.map((h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16)));
  for (let i = 0; i < 256; i++) {
    const t = i / 255 * (rgb.length - 1);
    const a = Math.min(rgb.length - 2, Math.floor(t)), f = t - a;
    for (let c = 0; c < 3; c++) out[i * 3 + c] = Math.round(rgb[a][c] * (1 - f) + rgb[a + 1][c] * f);
  }
  return out;
}
// Diverging (blue = negative, red = positive) and sequential (viridis-like).
const RDBU = lut(['#053061', '#2166ac', '#4393c3', '#92c5de', '#d1e5f0', '#f7f7f7',
  '#fddbc7', '#f4a582', '#d6604d', '#b2182b', '#67001f']);
const VIRIDIS = lut(['#440154', '#482878', '#3e4989', '#31688e', '#26828e', '#1f9e89',
  '#35b779', '#6ece58', '#b5de2b', '#fde725']);

function lutColor(map, t) {
  const i = Math.max(0, Math.min(255, Math.round(t * 255))) * 3;
  return `rgb(${map[i]},${map[i + 1]},${map[i + 2]})`;
}

// ---------------------------------------------------------------- drawing basics
const FONT = '12px system-ui, "DejaVu Sans", sans-serif';
const SMALL = '11px system-ui, "DejaVu Sans", sans-serif';
const INK = '#1d2430', MUTED = '#5b6472', GRID = '#e6e9ee';

/* Sizes the canvas to its CSS box at the device pixel ratio; returns ctx in CSS px. */
function setup(cv, height) {
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(200, cv.parentElement.clientWidth || cv.clientWidth || 600);
  const h = height || Number(cv.getAttribute('height')) || 300;
  cv.style.height = h + 'px';
  cv.width = Math.round(w * dpr);
  cv.height = Math.round(h * dpr);
  const ctx = cv.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  ctx.font = FONT;
  cv._regions = [];
  return { ctx, w, h, dpr };
}

function niceStep(span, count) {
  const raw = span / Math.max(1, count);
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10) * p;
}
function ticks(lo, hi, count, integer) {
  if (!(hi > lo)) return [lo];
  let step = niceStep(hi - lo, count);
  if (integer) step = Math.max(1, Math.round(step));
  const out = [];
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) {
    out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  }
  return out;
}
function fmt(v) {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e5 || a < 1e-3) return v.toExponential(1).replace('e+', 'e');
  return String(Number(v.toPrecision(4)));
}
function fmtVal(v) {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e5 || a < 1e-4) return v.toExponential(4);
  return String(Number(v.toPrecision(6)));
}

/* Axis ticks and labels around a plot rectangle. xmap/ymap: value -> px. */
function axes(ctx, r, o) {
  ctx.save();
  ctx.strokeStyle = '#9aa3af';
  ctx.lineWidth = 1;
  ctx.strokeRect(r.x + 0.5, r.y + 0.5, r.w - 1, r.h - 1);
  ctx.fillStyle = INK;
  ctx.font = SMALL;
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  for (const t of o.xticks) {
    const x = o.xmap(t);
    if (x < r.x - 1 || x > r.x + r.w + 1) continue;
    ctx.beginPath(); ctx.moveTo(x, r.y + r.h); ctx.lineTo(x, r.y + r.h + 4); ctx.stroke();
    ctx.fillText(o.xfmt ? o.xfmt(t) : fmt(t), x, r.y + r.h + 6);
  }
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  for (const t of o.yticks) {
    const y = o.ymap(t);
    if (y < r.y - 1 || y > r.y + r.h + 1) continue;
    ctx.beginPath(); ctx.moveTo(r.x - 4, y); ctx.lineTo(r.x, y); ctx.stroke();
    ctx.fillText(o.yfmt ? o.yfmt(t) : fmt(t), r.x - 6, y);
  }
  ctx.font = FONT;
  ctx.fillStyle = MUTED;
  ctx.textAlign = 'center';
  ctx.textBaseline = 'bottom';
  if (o.xlabel) ctx.fillText(o.xlabel, r.x + r.w / 2, r.y + r.h + 36);
  if (o.ylabel) {
    ctx.translate(r.x - (o.ylabelGap || 44), r.y + r.h / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textBaseline = 'bottom';
    ctx.fillText(o.ylabel, 0, 0);
  }
  ctx.restore();
}

/* Box-filtered resample of a rows x cols block (row-major, starting at
 * `off` of `data`) into a PW x PH RGBA image through `map`, values scaled
 * from [vmin, vmax]. Downsampling averages (no moiré), upsampling repeats. */
function raster(ctx, data, off, rows, cols, PW, PH, map, vmin, vmax) {
  const img = ctx.createImageData(PW, PH);
  const px = img.data;
  const r0 = new Int32Array(PH + 1), c0 = new Int32Array(PW + 1);
  for (let y = 0; y <= PH; y++) r0[y] = Math.min(rows, Math.floor(y * rows / PH));
  for (let x = 0; x <= PW; x++) c0[x] = Math.min(cols, Math.floor(x * cols / PW));
  const rowBuf = new Float64Array(cols);
  const scale = 255 / ((vmax - vmin) || 1);
  for (let y = 0; y < PH; y++) {
    let a = r0[y], b = Math.max(r0[y + 1], a + 1);
    if (a >= rows) { a = rows - 1; b = rows; }
    rowBuf.fill(0);
    for (let r = a; r < b; r++) {
      const base = off + r * cols;
      for (let c = 0; c < cols; c++) rowBuf[c] += data[base + c];
    }
    const inv = 1 / (b - a);
    for (let x = 0; x < PW; x++) {
      let ca = c0[x], cb = Math.max(c0[x + 1], ca + 1);
      if (ca >= cols) { ca = cols - 1; cb = cols; }
      let s = 0;
      for (let c = ca; c < cb; c++) s += rowBuf[c];
      const v = s * inv / (cb - ca);
      let i = Math.round((v - vmin) * scale);
      i = (i < 0 ? 0 : i > 255 ? 255 : i) * 3;
      const p = (y * PW + x) * 4;
      px[p] = map[i]; px[p + 1] = map[i + 1]; px[p + 2] = map[i + 2]; px[p + 3] = 255;
    }
  }
  return img;
}

function colorbar(ctx, x, y, w, h, map, vmin, vmax, label) {
  for (let i = 0; i < h; i++) {
    ctx.fillStyle = lutColor(map, 1 - i / (h - 1));
    ctx.fillRect(x, y + i, w, 1.5);
  }
  ctx.strokeStyle = '#9aa3af';
  ctx.strokeRect(x + 0.5, y + 0.5, w - 1, h - 1);
  ctx.fillStyle = INK;
  ctx.font = SMALL;
  ctx.textAlign = 'left';
  ctx.textBaseline = 'middle';
  for (const t of ticks(vmin, vmax, 6)) {
    const ty = y + h - (t - vmin) / ((vmax - vmin) || 1) * h;
    ctx.beginPath(); ctx.moveTo(x + w, ty); ctx.lineTo(x + w + 4, ty); ctx.stroke();
    ctx.fillText(fmt(t), x + w + 6, ty);
  }
  if (label) {
    ctx.save();
    ctx.fillStyle = MUTED;
    ctx.font = FONT;
    ctx.textAlign = 'center';
    ctx.translate(x + w + 54, y + h / 2);
    ctx.rotate(Math.PI / 2);
    ctx.fillText(label, 0, 0);
    ctx.restore();
  }
}

/* A heatmap with axes and a colour bar. o: data, off, rows, cols, vmin,
 * vmax, map, xlabel, ylabel, clabel, x0, y0 (index -> value offsets),
 * square, height, hover(row, col, v) -> text. */
function heatmap(cv, o) {
  const ml = 64, mr = 96, mt = 10, mb = 44;
  let height = o.height;
  const w0 = Math.max(200, cv.parentElement.clientWidth || 600);
  if (o.square) height = Math.min(Math.max(220, w0 - ml - mr), o.maxSide || 460) + mt + mb;
  const { ctx, w, h, dpr } = setup(cv, height);
  let pw = w - ml - mr, ph = h - mt - mb;
  if (o.square) pw = ph = Math.min(pw, ph);
  const r = { x: ml, y: mt, w: pw, h: ph };
  const PW = Math.round(pw * dpr), PH = Math.round(ph * dpr);
  const img = raster(ctx, o.data, o.off || 0, o.rows, o.cols, PW, PH, o.map, o.vmin, o.vmax);
  ctx.putImageData(img, Math.round(ml * dpr), Math.round(mt * dpr));
  const x0 = o.x0 || 0, y0 = o.y0 || 0;
  const xmap = (t) => r.x + (t - x0 + 0.5) / o.cols * pw;
  const ymap = (t) => r.y + (t - y0 + 0.5) / o.rows * ph;
  axes(ctx, r, {
    xticks: ticks(x0, x0 + o.cols - 1, Math.max(2, Math.floor(pw / 70)), true),
    yticks: ticks(y0, y0 + o.rows - 1, Math.max(2, Math.floor(ph / 40)), true),
    xmap, ymap, xlabel: o.xlabel, ylabel: o.ylabel,
  });
  colorbar(ctx, r.x + pw + 16, r.y, 14, ph, o.map, o.vmin, o.vmax, o.clabel);
  cv._regions.push({ r, rows: o.rows, cols: o.cols, data: o.data, off: o.off || 0, hover: o.hover });
  return r;
}

/* Small multiples: one N x N tile per head, a shared colour bar. */
function tiles(cv, o) {
  const w0 = Math.max(200, cv.parentElement.clientWidth || 600);
  const mr = 96, gap = 14, lab = 16;
  const perRow = Math.min(o.count, Math.max(1, Math.floor((w0 - mr + gap) / (90 + gap))), 8);
  const side = Math.min(170, Math.floor((w0 - mr - 10 - gap * (perRow - 1)) / perRow));
  const nRows = Math.ceil(o.count / perRow);
  const height = nRows * (side + lab + gap) + 28;
  const { ctx, dpr } = setup(cv, height);
  const PS = Math.max(1, Math.round(side * dpr));
  for (let t = 0; t < o.count; t++) {
    const x = 4 + (t % perRow) * (side + gap), y = Math.floor(t / perRow) * (side + lab + gap) + lab;
    const img = raster(ctx, o.data, t * o.n * o.n, o.n, o.n, PS, PS, o.map, o.vmin, o.vmax);
    ctx.putImageData(img, Math.round(x * dpr), Math.round(y * dpr));
    ctx.strokeStyle = t === o.selected ? '#111' : '#9aa3af';
    ctx.lineWidth = t === o.selected ? 2.5 : 1;
    ctx.strokeRect(x + 0.5, y + 0.5, side - 1, side - 1);
    ctx.lineWidth = 1;
    ctx.fillStyle = t === o.selected ? INK : MUTED;
    ctx.font = t === o.selected ? 'bold ' + SMALL : SMALL;
    ctx.textAlign = 'left';
    ctx.textBaseline = 'bottom';
    ctx.fillText(o.label(t), x, y - 2);
    cv._regions.push({
      r: { x, y, w: side, h: side }, rows: o.n, cols: o.n, data: o.data, off: t * o.n * o.n,
      hover: (i, j, v) => `head ${t}: query ${i}, key ${j} → ${fmtVal(v)}`,
    });
  }
  const gy = nRows * (side + lab + gap) + 14;
  ctx.fillStyle = MUTED;
  ctx.font = SMALL;
  ctx.textAlign = 'left';
  ctx.textBaseline = 'middle';
  ctx.fillText(`each tile: query position i (down) × key position j (across), 0…${o.n - 1}`, 4, gy);
  const used = Math.min(nRows * (side + lab + gap) - gap, 260);
  colorbar(ctx, 4 + perRow * (side + gap) + 6, lab, 14, Math.max(80, used - lab), o.map, o.vmin, o.vmax, o.clabel);
}

/* Lines: series [{ys, x0, dx, color, dash, width, label}], shared axes. */
function lines(cv, o) {
  const ml = 64, mr = 18, mt = 12, mb = 44;
  const { ctx, w, h } = setup(cv, o.height);
  const r = { x: ml, y: mt, w: w - ml - mr, h: h - mt - mb };
  const xmap = (v) => r.x + (v - o.xmin) / ((o.xmax - o.xmin) || 1) * r.w;
  const ymap = (v) => r.y + r.h - (v - o.ymin) / ((o.ymax - o.ymin) || 1) * r.h;
  const yt = ticks(o.ymin, o.ymax, Math.max(2, Math.floor(r.h / 45)));
  const xt = ticks(o.xmin, o.xmax, Math.max(2, Math.floor(r.w / 80)), o.integerX);
  ctx.strokeStyle = GRID;
  for (const t of yt) { const y = ymap(t); ctx.beginPath(); ctx.moveTo(r.x, y); ctx.lineTo(r.x + r.w, y); ctx.stroke(); }
  if (o.ymin < 0 && o.ymax > 0) {
    ctx.strokeStyle = '#b8bec8';
    ctx.beginPath(); ctx.moveTo(r.x, ymap(0)); ctx.lineTo(r.x + r.w, ymap(0)); ctx.stroke();
  }
  ctx.save();
  ctx.beginPath(); ctx.rect(r.x, r.y, r.w, r.h); ctx.clip();
  for (const s of o.series) trace(ctx, s, xmap, ymap, r);
  ctx.restore();
  axes(ctx, r, { xticks: xt, yticks: yt, xmap, ymap, xlabel: o.xlabel, ylabel: o.ylabel });
  legend(ctx, o.series.filter((s) => s.label), r.x + 10, r.y + 8, o.legendRight ? r.x + r.w : 0);
  return { ctx, r, xmap, ymap };
}

/* One series; when there are more points than pixels, a min/max envelope per pixel column. */
function trace(ctx, s, xmap, ymap, r) {
  const n = s.ys.length, x0 = s.x0 || 0, dx = s.dx || 1;
  ctx.strokeStyle = s.color;
  ctx.lineWidth = s.width || 1.6;
  ctx.setLineDash(s.dash || []);
  ctx.beginPath();
  const span = Math.abs(xmap(x0 + dx * (n - 1)) - xmap(x0));
  if (n > 2 * span) {
    // More points than pixels: one continuous path through the min and max
    // of every pixel column (at least a pixel tall, so flat stretches show).
    let col = -1, lo = 0, hi = 0, first = true;
    const flush = () => {
      if (col < 0) return;
      let ya = ymap(lo), yb = ymap(hi);
      if (Math.abs(ya - yb) < 1) { const m = (ya + yb) / 2; ya = m + 0.5; yb = m - 0.5; }
      if (first) { ctx.moveTo(col + 0.5, ya); first = false; } else ctx.lineTo(col + 0.5, ya);
      ctx.lineTo(col + 0.5, yb);
    };
    for (let i = 0; i < n; i++) {
      const c = Math.floor(xmap(x0 + dx * i));
      const v = s.ys[i];
      if (c !== col) { flush(); col = c; lo = hi = v; } else { if (v < lo) lo = v; if (v > hi) hi = v; }
    }
    flush();
    ctx.lineWidth = Math.min(ctx.lineWidth, 1.2);
  } else {
    for (let i = 0; i < n; i++) {
      const x = xmap(x0 + dx * i), y = ymap(s.ys[i]);
      if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    }
  }
  ctx.stroke();
  ctx.setLineDash([]);
}

function legend(ctx, items, x, y, right) {
  if (!items.length) return;
  ctx.font = SMALL;
  const wmax = Math.max(...items.map((s) => ctx.measureText(s.label).width)) + 34;
  const bx = right ? right - wmax - 10 : x;
  ctx.fillStyle = 'rgba(255,255,255,0.88)';
  ctx.fillRect(bx - 4, y - 4, wmax + 8, items.length * 16 + 6);
  items.forEach((s, i) => {
    const yy = y + 8 + i * 16;
    ctx.strokeStyle = s.color;
    ctx.lineWidth = 2;
    ctx.setLineDash(s.dash || []);
    ctx.beginPath(); ctx.moveTo(bx, yy); ctx.lineTo(bx + 24, yy); ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = INK;
    ctx.textAlign = 'left';
    ctx.textBaseline = 'middle';
    ctx.fillText(s.label, bx + 30, yy);
  });
  ctx.lineWidth = 1;
}

// ---------------------------------------------------------------- hover read-out
function bindHover() {
  const tip = $('tip');
  document.addEventListener('mousemove', (e) => {
    const cv = e.target;
    if (!(cv instanceof HTMLCanvasElement) || !cv._regions) { tip.hidden = true; return; }
    const b = cv.getBoundingClientRect();
    const mx = e.clientX - b.left, my = e.clientY - b.top;
    for (const g of cv._regions) {
      const { r } = g;
      if (mx < r.x || my < r.y || mx >= r.x + r.w || my >= r.y + r.h) continue;
      const col = Math.min(g.cols - 1, Math.floor((mx - r.x) / r.w * g.cols));
      const row = Math.min(g.rows - 1, Math.floor((my - r.y) / r.h * g.rows));
      const v = g.data[g.off + row * g.cols + col];
      tip.textContent = g.hover ? g.hover(row, col, v) : `${row}, ${col}: ${fmtVal(v)}`;
      tip.style.left = (e.clientX + 14) + 'px';
      tip.style.top = (e.clientY + 12) + 'px';
      tip.hidden = false;
      return;
    }
    tip.hidden = true;
  });
}

// ---------------------------------------------------------------- requests
function ropeScaling(s) {
  switch (s.scaling) {
    case 'linear': return { type: 'linear', factor: s.factor };
    case 'dynamic': return { type: 'dynamic', factor: s.factor, original_max_position_embeddings: s.omax };
    case 'yarn': return { type: 'yarn', factor: s.factor, original_max_position_embeddings: s.omax };
    case 'llama3': return {
      type: 'llama3', factor: s.factor, low_freq_factor: 1, high_freq_factor: 4,
      original_max_position_embeddings: s.omax,
    };
    default: return null;
  }
}
function ropeParams(s, layout) {
  const p = { base: s.base, layout };
  const sc = ropeScaling(s);
  if (sc) p.scaling = sc;
  return p;
}
function scalingText(s) {
  const sc = ropeScaling(s);
  if (!sc) return 'no scaling';
  const extra = sc.type === 'llama3' ? ', low/high_freq_factor 1/4 (Llama 3.1)' : '';
  return `${sc.type} scaling, factor ${s.factor}` +
    (sc.original_max_position_embeddings ? `, original max ${s.omax}` : '') + extra;
}

/* Deterministic illustrative T5 bucket table [32][heads]: not trained weights. */
function t5Table(heads) {
  const t = [];
  for (let b = 0; b < 32; b++) {
    const after = b >= 16, rank = b % 16, row = [];
    for (let h = 0; h < heads; h++) {
      const width = Math.pow(1.6, h);
      let v = 3 * Math.exp(-rank / width) - 1.5;
      if (after && h % 2 === 0) v -= 2;
      row.push(Math.round(v * 1000) / 1000);
    }
    t.push(row);
  }
  return t;
}
const T5_FORMULA = 't5_bias[b][h] = 3·exp(−r/1.6^h) − 1.5, where r = b mod 16 is the distance rank of bucket b, ' +
  'minus 2 for keys after the query (b ≥ 16) on even heads';

/* Seeded uniform(-1, 1) vector (mulberry32). */
function seeded(n, seed) {
  const out = new Float32Array(n);
  let a = seed >>> 0;
  for (let i = 0; i < n; i++) {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = ((t ^ (t >>> 14)) >>> 0) / 4294967296 * 2 - 1;
  }
  return out;
}

// ---------------------------------------------------------------- section 1 + 2: table
const tableView = { last: null };

function tableRequest(s) {
  const layout = tableLayout(s);
  if (s.scheme === 'sinusoidal' || s.scheme === 'rope') {
    const params = s.scheme === 'rope' ? ropeParams(s, layout) : { base: s.base, layout };
    // RoPE rotates pairs: an odd d_model is shown as its even part.
    const d = s.scheme === 'rope' ? ropeDim(s.d) : s.d;
    return { body: { shape: [s.n, d], scheme: s.scheme, params, encoding: 'base64' }, layout };
  }
  return { body: biasBody(s.scheme, s, Math.min(s.n, BIAS_MAX)), layout: null };
}

function biasBody(scheme, s, n) {
  if (scheme === 'alibi') {
    return { shape: [n, 8], scheme: 'alibi', params: { heads: s.heads, form: s.form }, encoding: 'base64' };
  }
  const dm = 8 * s.heads;
  return {
    shape: [n, dm], scheme: 't5',
    model: { d_model: dm, heads: s.heads, scheme: 't5', weights: { t5_bias: t5Table(s.heads) } },
    encoding: 'base64',
  };
}

async function loadTable(s, signal) {
  const { body, layout } = tableRequest(s);
  showRequest('table-request', 'encode', body);
  const key = JSON.stringify(body.model ? [body.shape, s.heads, 't5'] : body);
  const res = await post('encode', body, key, signal);
  live(signal);
  const j = res.json;
  let data, shape;
  if (j.encoded !== undefined) { data = b64ToF32(j.encoded); shape = j.encoded_shape; }
  else { data = b64ToF32(j.bias); shape = j.bias_shape; }
  tableView.last = { s, layout, data, shape, res, attention: j.attention_factor };
  drawTable();
}

function pairsOf(v) {
  // Channels (a, b) of frequency k whose values at position p are
  // (sin, cos) for sinusoidal and (cos, sin) for the RoPE cache.
  const { s, layout, shape } = v;
  const d = shape[1];
  const out = [];
  if (s.scheme === 'sinusoidal') {
    if (layout === 'interleaved') for (let k = 0; 2 * k + 1 < d; k++) out.push({ sin: 2 * k, cos: 2 * k + 1 });
    else { const h = Math.ceil(d / 2); for (let k = 0; k < Math.floor(d / 2); k++) out.push({ sin: k, cos: h + k }); }
  } else {
    const hd = d;
    if (layout === 'half') for (let k = 0; k < hd / 2; k++) out.push({ cos: k, sin: k + hd / 2 });
    else for (let k = 0; k < hd / 2; k++) out.push({ cos: 2 * k, sin: 2 * k + 1 });
  }
  return out;
}

function drawTable() {
  const v = tableView.last;
  if (!v) return;
  const t0 = performance.now();
  const { s, shape } = v;
  if (s.scheme === 'alibi' || s.scheme === 't5') drawBiasMain(v);
  else drawEncodingTable(v);
  const ms = performance.now() - t0;
  const cells = shape.reduce((a, b) => a * b, 1);
  $('table-status').textContent =
    `POST /encode → ${shape.join(' × ')} float32 (${cells.toLocaleString('en')} values, ${kb(v.res.bytes)} base64) ` +
    `in ${v.res.ms.toFixed(0)} ms; drawn in ${ms.toFixed(0)} ms.`;
  tableView.drawn = { scheme: s.scheme, rows: shape[shape.length - 2], cols: shape[shape.length - 1] };
}

function maxAbs(data) {
  let m = 0;
  for (let i = 0; i < data.length; i++) { const a = Math.abs(data[i]); if (a > m) m = a; }
  return m;
}
function range(data, off, len) {
  let lo = Infinity, hi = -Infinity;
  for (let i = off; i < off + len; i++) { const x = data[i]; if (x < lo) lo = x; if (x > hi) hi = x; }
  if (!(hi > lo)) { lo -= 1; hi += 1; }
  return [lo, hi];
}

function drawEncodingTable(v) {
  const { s, layout, data, shape } = v;
  const [n, d] = shape;
  const vmax = Math.max(1, maxAbs(data));
  const isRope = s.scheme === 'rope';
  const what = isRope
    ? `the RoPE cos/sin cache the server applies (bare table: rotation of a vector with 1 at the first member of every pair), layout <b>${layout}</b> — ` +
      (layout === 'half' ? 'cos in the first half of the dimensions, sin in the second (GPT-NeoX / Hugging Face Llama)'
        : 'cos and sin alternate, c0 s0 c1 s1 … (GPT-J / Meta Llama)') +
      `; ${scalingText(s)}` + (v.attention ? `; attention factor ${fmt(v.attention)} multiplies cos and sin` : '')
    : `the sinusoidal table PE[p][2i] = sin(p / base^(2i/d)), PE[p][2i+1] = cos(…), layout <b>${layout}</b>` +
      (layout === 'split' ? ' (all sines first, then all cosines)' : ' (sin and cos alternate, as in Vaswani et al.)');
  $('table-caption').innerHTML = `${n} positions × ${d} dimensions of ${what}. Base ${fmt(s.base)}. ` +
    (d !== s.d ? `(RoPE rotates pairs: of d_model ${s.d} the even part, ${d}, is shown.) ` : '') +
    'Low dimensions turn fast, high ones slowly: each column is one frequency.';
  heatmap($('heatmap'), {
    data, rows: n, cols: d, vmin: -vmax, vmax, map: RDBU, height: 440,
    xlabel: 'dimension', ylabel: 'position', clabel: 'value',
    hover: (p, i, val) => `position ${p}, dim ${i}: ${fmtVal(val)}`,
  });
  drawDims(v);
}

/* Section 2 for tables: chosen dimensions as strips, and the ladder. */
function drawDims(v) {
  const { s, data, shape } = v;
  const [n, d] = shape;
  const pairs = pairsOf(v);
  // Wavelength of every pair, measured from the server's row at position 1.
  const lam = pairs.map((pr) => 2 * Math.PI / Math.atan2(data[d + pr.sin], data[d + pr.cos]));
  const pairOfDim = new Map();
  pairs.forEach((pr, k) => { pairOfDim.set(pr.sin, k); pairOfDim.set(pr.cos, k); });
  let dims = s.dims.split(',').filter((x) => x !== '').map(Number).filter((x) => x >= 0 && x < d);
  dims = [...new Set(dims)].slice(0, 8);
  if (!dims.length) {
    const P = pairs.length, cnt = Math.min(6, P);
    for (let j = 0; j < cnt; j++) dims.push(pairs[Math.round(j * (P - 1) / Math.max(1, cnt - 1))].sin);
    dims = [...new Set(dims)];
  }
  $('lines-title').textContent = '2 · Dimensions across positions: the wavelength ladder';
  $('lines-caption').innerHTML =
    `Chosen dimensions of the table above across all ${n} positions (one strip each, values from the server). ` +
    `Below: the wavelength 2π/θ of every frequency, measured from the server's row at position 1 ` +
    `(θ = atan2(sin, cos)); the dashed line is the unscaled formula 2π·base^(2i/d), from 2π up to 2π·base = ${fmt(2 * Math.PI * s.base)}. ` +
    `Frequencies whose wavelength is far above the length (grey line) hardly move over ${n} positions.`;
  $('ladder-box').hidden = false;
  $('lines-status').textContent = `Same POST /encode response as section 1; dimensions ${dims.join(', ')}` +
    (n > 1000 ? '; with more positions than pixels each strip shows the min…max of every pixel column.' : '.');

  // strips
  const cv = $('lines');
  const stripH = 50, gap = 8, ml = 170, mr = 18, mt = 6, mb = 44;
  const H = mt + dims.length * (stripH + gap) - gap + mb;
  const { ctx, w } = setup(cv, H);
  const pw = w - ml - mr;
  const a = Math.max(1, maxAbs(data));
  const xmap = (p) => ml + p / Math.max(1, n - 1) * pw;
  const xt = ticks(0, n - 1, Math.max(2, Math.floor(pw / 80)), true);
  dims.forEach((dim, j) => {
    const y0 = mt + j * (stripH + gap);
    const ymap = (val) => y0 + stripH / 2 - val / a * (stripH / 2 - 2);
    ctx.fillStyle = '#fafbfc';
    ctx.fillRect(ml, y0, pw, stripH);
    ctx.strokeStyle = GRID;
    ctx.strokeRect(ml + 0.5, y0 + 0.5, pw - 1, stripH - 1);
    ctx.beginPath(); ctx.moveTo(ml, ymap(0)); ctx.lineTo(ml + pw, ymap(0)); ctx.stroke();
    const ys = new Float32Array(n);
    for (let p = 0; p < n; p++) ys[p] = data[p * d + dim];
    ctx.save();
    ctx.beginPath(); ctx.rect(ml, y0, pw, stripH); ctx.clip();
    trace(ctx, { ys, color: PALETTE[j % PALETTE.length], width: 1.5 }, xmap, ymap);
    ctx.restore();
    const k = pairOfDim.get(dim);
    const kind = k === undefined ? '' : (pairs[k].sin === dim ? 'sin' : 'cos');
    ctx.fillStyle = PALETTE[j % PALETTE.length];
    ctx.font = 'bold ' + SMALL;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    ctx.fillText(`dim ${dim}` + (kind ? ` (${kind}, i = ${k})` : ''), ml - 10, y0 + stripH / 2 - 7);
    ctx.font = SMALL;
    ctx.fillStyle = MUTED;
    ctx.fillText(k === undefined ? '' : `λ ≈ ${fmt(lam[k])}`, ml - 10, y0 + stripH / 2 + 8);
    ctx.textAlign = 'left';
    ctx.fillText(`±${fmt(a)}`, ml + 4, y0 + 8);
  });
  const bottom = mt + dims.length * (stripH + gap) - gap;
  axes(ctx, { x: ml, y: bottom, w: pw, h: 0 }, {
    xticks: xt, yticks: [], xmap, ymap: () => 0, xlabel: 'position',
  });

  // ladder
  const P = pairs.length;
  const lcv = $('ladder');
  const lo = Math.log10(Math.min(2 * Math.PI, ...lam.filter(isFinite)) / 1.5);
  const hiVal = Math.max(2 * Math.PI * s.base, n, ...lam.filter(isFinite));
  const hi = Math.log10(hiVal * 1.6);
  const theo = new Float32Array(P);
  // rope: rotary_dim = d; sinusoidal: the exponent is 2i/d for any d
  for (let k = 0; k < P; k++) theo[k] = Math.log10(2 * Math.PI * Math.pow(s.base, 2 * k / d));
  const meas = Float32Array.from(lam, (x) => Math.log10(x));
  const res = lines(lcv, {
    height: 260, xmin: 0, xmax: Math.max(1, P - 1), ymin: lo, ymax: hi, integerX: true,
    xlabel: 'frequency index i (pair)', ylabel: 'wavelength (positions)',
    series: [
      { ys: theo, color: '#9aa3af', dash: [5, 4], width: 1.5, label: '2π·base^(2i/d), unscaled formula' },
      { ys: meas, color: '#2f6db5', width: 2, label: 'measured from the server\'s table' },
    ],
  });
  const { ctx: lc, r, xmap: lx, ymap: ly } = res;
  // y tick labels as powers of ten: redraw over the log values
  lc.save();
  lc.fillStyle = '#fff';
  lc.fillRect(0, r.y - 6, r.x - 5, r.h + 12);
  lc.fillStyle = INK;
  lc.font = SMALL;
  lc.textAlign = 'right';
  lc.textBaseline = 'middle';
  for (let e = Math.ceil(lo); e <= Math.floor(hi); e++) {
    lc.fillText(e <= 4 ? String(Math.pow(10, e)) : `1e${e}`, r.x - 6, ly(e));
    lc.strokeStyle = '#9aa3af';
    lc.beginPath(); lc.moveTo(r.x - 4, ly(e)); lc.lineTo(r.x, ly(e)); lc.stroke();
  }
  lc.save();
  lc.translate(14, r.y + r.h / 2);
  lc.rotate(-Math.PI / 2);
  lc.textAlign = 'center';
  lc.fillStyle = MUTED;
  lc.font = FONT;
  lc.fillText('wavelength (positions, log)', 0, 0);
  lc.restore();
  const guide = (val, text, color) => {
    const y = ly(Math.log10(val));
    lc.strokeStyle = color;
    lc.setLineDash([2, 3]);
    lc.beginPath(); lc.moveTo(r.x, y); lc.lineTo(r.x + r.w, y); lc.stroke();
    lc.setLineDash([]);
    lc.fillStyle = color;
    lc.textAlign = 'right';
    lc.textBaseline = 'bottom';
    lc.fillText(text, r.x + r.w - 4, y - 2);
  };
  guide(2 * Math.PI, '2π', '#6b7280');
  guide(2 * Math.PI * s.base, `2π·base = ${fmt(2 * Math.PI * s.base)}`, '#6b7280');
  guide(n, `length ${n}`, '#b0b6bf');
  dims.forEach((dim, j) => {
    const k = pairOfDim.get(dim);
    if (k === undefined || !isFinite(lam[k])) return;
    lc.fillStyle = PALETTE[j % PALETTE.length];
    lc.beginPath(); lc.arc(lx(k), ly(Math.log10(lam[k])), 5, 0, 2 * Math.PI); lc.fill();
  });
  lc.restore();
}

/* Scheme alibi/t5 in sections 1-2: one head large, and bias against offset. */
function drawBiasMain(v) {
  const { s, data, shape } = v;
  const [H, n] = shape;
  const head = Math.min(s.head, H - 1);
  const off = head * n * n;
  const [lo, hi] = range(data, off, n * n);
  const t5 = s.scheme === 't5';
  $('table-caption').innerHTML = (t5
    ? `T5 relative bias of head ${head} (of ${H}), query position × key position, first ${n} positions; ` +
      'bias[h][i][j] = t5_bias[bucket(j − i)][h] with T5\'s buckets (32 buckets, max distance 128, bidirectional). ' +
      '<b>The t5_bias table is illustrative</b>, generated by this page (see section 4), not trained weights.'
    : `ALiBi bias of head ${head} (of ${H}), query position × key position, first ${n} positions, form ${s.form}: ` +
      (s.form === 'symmetric' ? 'bias = −slope·|i − j|.' : 'bias = slope·j (equal to the symmetric form after a causal mask and softmax).')) +
    (s.n > n ? ` (Length ${s.n} is capped at ${BIAS_MAX} here: the tensor is heads × N × N.)` : '');
  heatmap($('heatmap'), {
    data, off, rows: n, cols: n, vmin: lo, vmax: hi, map: VIRIDIS, square: true, maxSide: 440,
    xlabel: 'key position j', ylabel: 'query position i', clabel: 'bias added to the score',
    hover: (i, j, val) => `head ${head}: query ${i}, key ${j} → ${fmtVal(val)}`,
  });
  // Section 2: every head's bias against offset j - i for the middle query.
  const qi = Math.floor((n - 1) / 2);
  const series = [];
  let ylo = Infinity, yhi = -Infinity;
  for (let h = 0; h < H; h++) {
    const ys = data.subarray(h * n * n + qi * n, h * n * n + qi * n + n);
    for (const x of ys) { if (x < ylo) ylo = x; if (x > yhi) yhi = x; }
    series.push({
      ys, x0: -qi, color: PALETTE[h % PALETTE.length], width: h === head ? 2.6 : 1.4,
      label: H <= 10 ? `head ${h}` + (h === head ? ' (selected)' : '') : (h === head ? `head ${h}` : ''),
    });
  }
  if (!(yhi > ylo)) { ylo -= 1; yhi += 1; }
  const pad = (yhi - ylo) * 0.06;
  $('lines-title').textContent = '2 · Bias against the offset, every head';
  $('lines-caption').textContent =
    `Row i = ${qi} of each head's bias, plotted against the offset j − i (keys before the query on the left).`;
  $('ladder-box').hidden = true;
  $('lines-status').textContent = `Same POST /encode response as section 1: row ${qi} of every head.`;
  lines($('lines'), {
    height: 360, series, xmin: -qi, xmax: n - 1 - qi, ymin: ylo - pad, ymax: yhi + pad, integerX: true,
    xlabel: 'offset j − i (key − query)', ylabel: 'bias', legendRight: true,
  });
}

// ---------------------------------------------------------------- section 3: RoPE
const ropeView = { last: null };

function ropeVectors(s, hd) {
  if (s.qk === 'ones') return { q: new Float32Array(hd).fill(1), k: new Float32Array(hd).fill(1) };
  const q = seeded(hd, 1);
  return { q, k: s.qk === 'same' ? q : seeded(hd, 2) };
}

async function loadRope(s, signal) {
  const hd = ropeDim(s.d);
  const L = Math.max(2, Math.min(s.n, ROPE_MAX, Math.floor(ROPE_FLOATS / (4 * hd))));
  const { q, k } = ropeVectors(s, hd);
  const T = 2 * L;
  const emb = new Float32Array(2 * T * hd);
  for (let t = 0; t < T; t++) { emb.set(q, t * hd); emb.set(k, (T + t) * hd); }
  const positions = [];
  for (let t = 0; t < L; t++) positions.push(t);
  for (let t = 0; t < L; t++) positions.push(SHIFT + t);
  const embB64 = f32ToB64(emb);
  const out = {};
  const layouts = ['half', 'interleaved'];
  let bytes = 0, ms = 0;
  await Promise.all(layouts.map(async (lay) => {
    const body = {
      embeddings: embB64, shape: [2, T, hd], positions, scheme: 'rope',
      params: ropeParams(s, lay), encoding: 'base64',
    };
    if (lay === 'half') showRequest('rope-request', 'encode', body);
    const key = JSON.stringify([hd, L, s.qk, body.params]);
    const res = await post('encode', body, key, signal);
    bytes += res.bytes; ms = Math.max(ms, res.ms);
    out[lay] = { data: b64ToF32(res.json.encoded), attention: res.json.attention_factor };
  }));
  live(signal);
  ropeView.last = { s, hd, L, T, out, bytes, ms, q, k };
  drawRope();
}

function drawRope() {
  const v = ropeView.last;
  if (!v) return;
  const { s, hd, L, T, out } = v;
  const i = ropePair(s);
  const chans = { half: [i, i + hd / 2], interleaved: [2 * i, 2 * i + 1] };
  const colors = { half: '#2f6db5', interleaved: '#e8772e' };

  // q.k against the offset for q at position L-1 and at SHIFT+L-1.
  const series = [];
  let lo = Infinity, hi = -Infinity, shiftErr = 0;
  for (const lay of ['half', 'interleaved']) {
    const D = out[lay].data;
    const dots = [new Float32Array(L), new Float32Array(L)];
    for (let b = 0; b < 2; b++) {
      const m = b * L + L - 1; // token index of the query
      for (let delta = 0; delta < L; delta++) {
        const j = m - delta;
        let acc = 0;
        const qo = m * hd, ko = (T + j) * hd;
        for (let c = 0; c < hd; c++) acc += D[qo + c] * D[ko + c];
        dots[b][delta] = acc;
        if (acc < lo) lo = acc;
        if (acc > hi) hi = acc;
      }
    }
    for (let delta = 0; delta < L; delta++) shiftErr = Math.max(shiftErr, Math.abs(dots[0][delta] - dots[1][delta]));
    series.push({ ys: dots[0], color: colors[lay], width: 2, label: `${lay}: query at position ${L - 1}` });
    series.push({ ys: dots[1], color: colors[lay], width: 1.5, dash: [6, 4], label: `${lay}: query at position ${SHIFT + L - 1}` });
  }
  if (!(hi > lo)) { lo -= 1; hi += 1; }
  const pad = (hi - lo) * 0.06;
  // Angle per position, measured: from position 0 to 1 of the rotated pair.
  const Dh = out.half.data, [ca, cb] = chans.half;
  let theta = Math.atan2(Dh[hd + cb], Dh[hd + ca]) - Math.atan2(Dh[cb], Dh[ca]);
  theta = Math.atan2(Math.sin(theta), Math.cos(theta));
  const qkText = s.qk === 'ones' ? 'q = k = all ones' : s.qk === 'same' ? 'k = q, a seeded random vector' : 'q and k two seeded random vectors';
  $('rope-caption').innerHTML =
    `One head of ${hd} dimensions, base ${fmt(s.base)}, ${scalingText(s)}. Left: pair i = ${i} of the query vector, ` +
    `rotated by the server at positions 0…${Math.min(ROT_POINTS, L) - 1} (colour = position); ` +
    `measured angle per position θ = ${fmtVal(theta)} rad, wavelength ${fmt(2 * Math.PI / theta)}` +
    (out.half.attention ? `; the radius grows by the attention factor ${fmt(out.half.attention)} that ${s.scaling} multiplies cos and sin by. ` : '. ') +
    `It is the same rotation in both layouts; they differ in which channels form the pair: ` +
    `half (${chans.half[0]}, ${chans.half[1]}), interleaved (${chans.interleaved[0]}, ${chans.interleaved[1]}). ` +
    `Right: q·k (${qkText}) with q at a position m and k at m − offset, for two m ${SHIFT} apart: ` +
    `the dashed curves lie on the solid ones (largest gap ${fmtVal(shiftErr)}), so the score depends only on the offset. ` +
    `The same raw vectors pair different channels in the two layouts, so their curves differ` +
    (s.qk === 'ones' ? ' (except for all-ones vectors, as here).' : '.');

  lines($('rope-dot'), {
    height: 380, series, xmin: 0, xmax: L - 1, ymin: lo - pad, ymax: hi + pad, integerX: true,
    xlabel: 'offset m − n (query position − key position)', ylabel: 'q · k', legendRight: true,
  });
  drawCircle(v, i, chans, colors);
  $('rope-status').textContent =
    `2 × POST /encode (half, interleaved): [2, ${T}, ${hd}] in, ${kb(v.bytes)} base64 back, slowest ${v.ms.toFixed(0)} ms.`;
}

function drawCircle(v, i, chans, colors) {
  const { ctx, w, h } = setup($('rope-circle'), 380);
  const P = Math.min(ROT_POINTS, v.L);
  const pts = {};
  let rmax = 1e-9;
  for (const lay of ['half', 'interleaved']) {
    const D = v.out[lay].data, [a, b] = chans[lay];
    pts[lay] = [];
    for (let p = 0; p < P; p++) {
      const x = D[p * v.hd + a], y = D[p * v.hd + b];
      pts[lay].push([x, y]);
      rmax = Math.max(rmax, Math.hypot(x, y));
    }
  }
  const side = Math.min(w - 40, h - 60);
  const cx = w / 2, cy = 14 + side / 2;
  const sc = side / 2 / (rmax * 1.1);
  ctx.strokeStyle = '#c9ced6';
  ctx.beginPath(); ctx.moveTo(cx - side / 2, cy); ctx.lineTo(cx + side / 2, cy); ctx.stroke();
  ctx.beginPath(); ctx.moveTo(cx, cy - side / 2); ctx.lineTo(cx, cy + side / 2); ctx.stroke();
  ctx.fillStyle = MUTED;
  ctx.font = SMALL;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'top';
  ctx.fillText('1st channel', cx + side / 2, cy + 4);
  ctx.textAlign = 'left';
  ctx.fillText('2nd channel', cx + 5, cy - side / 2);
  for (const lay of ['half', 'interleaved']) {
    const pp = pts[lay].map(([x, y]) => [cx + x * sc, cy - y * sc]);
    const r0 = Math.hypot(pts[lay][0][0], pts[lay][0][1]) * sc;
    ctx.strokeStyle = colors[lay];
    ctx.globalAlpha = 0.3;
    ctx.beginPath(); ctx.arc(cx, cy, r0, 0, 2 * Math.PI); ctx.stroke();
    ctx.globalAlpha = 0.18;
    ctx.beginPath();
    pp.forEach(([x, y], p) => (p ? ctx.lineTo(x, y) : ctx.moveTo(x, y)));
    ctx.stroke();
    ctx.globalAlpha = 1;
    for (let p = P - 1; p >= 0; p--) {
      const [x, y] = pp[p];
      ctx.fillStyle = ctx.strokeStyle = lutColor(VIRIDIS, p / Math.max(1, P - 1));
      ctx.beginPath();
      if (lay === 'half') { ctx.arc(x, y, 4, 0, 2 * Math.PI); ctx.fill(); }
      else { ctx.lineWidth = 2; ctx.arc(x, y, 6.5, 0, 2 * Math.PI); ctx.stroke(); ctx.lineWidth = 1; }
    }
    for (let p = 0; p < 2; p++) {
      const [x, y] = pp[p];
      ctx.strokeStyle = colors[lay];
      ctx.lineWidth = p === 0 ? 2.2 : 1.2;
      ctx.setLineDash(p === 0 ? [] : [4, 3]);
      ctx.beginPath(); ctx.moveTo(cx, cy); ctx.lineTo(x, y); ctx.stroke();
      ctx.setLineDash([]);
      ctx.lineWidth = 1;
      const ux = (x - cx) / (Math.hypot(x - cx, y - cy) || 1), uy = (y - cy) / (Math.hypot(x - cx, y - cy) || 1);
      ctx.fillStyle = colors[lay];
      ctx.font = 'bold ' + SMALL;
      ctx.textAlign = 'center';
      ctx.textBaseline = 'middle';
      ctx.fillText(`p=${p}`, x + ux * 16, y + uy * 16);
    }
  }
  ctx.font = SMALL;
  ctx.textAlign = 'left';
  ctx.textBaseline = 'middle';
  ctx.fillStyle = colors.half;
  ctx.beginPath(); ctx.arc(12, h - 28, 4, 0, 2 * Math.PI); ctx.fill();
  ctx.fillText(`half: channels (${chans.half.join(', ')})`, 22, h - 28);
  ctx.strokeStyle = colors.interleaved;
  ctx.lineWidth = 2;
  ctx.beginPath(); ctx.arc(12, h - 11, 5, 0, 2 * Math.PI); ctx.stroke();
  ctx.lineWidth = 1;
  ctx.fillStyle = colors.interleaved;
  ctx.fillText(`interleaved: channels (${chans.interleaved.join(', ')})`, 22, h - 11);
  ctx.fillStyle = MUTED;
  ctx.textAlign = 'right';
  ctx.fillText(`dot colour: position 0 → ${P - 1}`, w - 4, h - 11);
}

// ---------------------------------------------------------------- section 4: ALiBi and T5
const biasView = { last: null };

async function loadBias(s, signal) {
  const n = Math.min(s.n, TILE_MAX);
  const a = biasBody('alibi', s, n), t = biasBody('t5', s, n);
  showRequest('bias-request', 'encode', t);
  const [ra, rt] = await Promise.all([
    post('encode', a, JSON.stringify(a), signal),
    post('encode', t, JSON.stringify([t.shape, s.heads, 't5']), signal),
  ]);
  live(signal);
  biasView.last = {
    s, n, alibi: b64ToF32(ra.json.bias), t5: b64ToF32(rt.json.bias),
    bytes: ra.bytes + rt.bytes, ms: Math.max(ra.ms, rt.ms),
  };
  drawBias();
}

function drawBias() {
  const v = biasView.last;
  if (!v) return;
  const { s, n } = v;
  const H = s.heads;
  // Slopes as the server applies them: bias between positions 0 and 1.
  const slope = (h) => s.form === 'symmetric' ? -v.alibi[h * n * n + 1] : v.alibi[h * n * n + 1];
  const [alo, ahi] = range(v.alibi, 0, v.alibi.length);
  tiles($('alibi-grid'), {
    data: v.alibi, count: H, n, map: VIRIDIS, vmin: alo, vmax: ahi, selected: s.head,
    label: (h) => `head ${h} · slope ${Number(slope(h).toPrecision(3))}`, clabel: 'bias',
  });
  const [tlo, thi] = range(v.t5, 0, v.t5.length);
  tiles($('t5-grid'), {
    data: v.t5, count: H, n, map: RDBU, vmin: -Math.max(-tlo, thi), vmax: Math.max(-tlo, thi), selected: s.head,
    label: (h) => `head ${h}`, clabel: 'bias',
  });
  $('bias-caption').innerHTML =
    `${H} heads (the <i>heads</i> control), first ${n} positions` + (s.n > n ? ` (length capped at ${TILE_MAX} here: these are heads × N × N tensors)` : '') +
    `; the selected head (<i>head</i>) is outlined. ALiBi adds ` +
    (s.form === 'symmetric' ? '−slope·|i − j|' : 'slope·j (BLOOM\'s form; the same as −slope·(i − j) after a causal mask and softmax)') +
    ` to every score; the slopes (read back from the server's bias) form the paper's geometric sequence, also for head counts that are not powers of two. ` +
    `One colour scale serves all heads: the later heads' small slopes barely penalise distance over ${n} positions. ` +
    `T5 adds a value per head and per distance bucket: exact for distances below 8, logarithmic up to 128, the same beyond.`;
  $('t5-note').textContent =
    `T5 needs a trained t5_bias table [32 buckets][${H} heads]; this page sends an illustrative one in an inline model ` +
    `(model: {scheme: "t5", weights: {t5_bias}}): ${T5_FORMULA}. The bucketing is the server's; the values are not from any trained model.`;
  $('bias-status').textContent =
    `2 × POST /encode (alibi, t5): [${H}, ${n}, ${n}] each, ${kb(v.bytes)} base64, slowest ${v.ms.toFixed(0)} ms.`;
}

// ---------------------------------------------------------------- section 5: similarity
const simView = { last: null, models: null };

async function loadInfo() {
  const res = await fetch('info');
  if (!res.ok) throw new ApiError(`GET /info answered ${res.status}`);
  const info = await res.json();
  simView.models = info.models || [];
  const sel = $('c-model');
  sel.replaceChildren(...simView.models.map((m) =>
    new Option(`${m.name} (${m.scheme}, d_model ${m.d_model}, ${m.heads} heads)`, m.name)));
  syncControls();
}

async function loadSim(s, signal) {
  if (!simView.models) await loadInfo();
  live(signal);
  const models = simView.models;
  if (!models.length) throw new ApiError('GET /info lists no models');
  const m = models.find((x) => x.name === s.model) || models[0];
  if (m.name !== s.model && state === s) {
    // A model named in the URL that this server does not serve.
    state = normalize(Object.assign({}, s, { model: m.name }));
    history.replaceState(null, '', stateToQuery(state));
    syncControls();
  }
  const dm = m.d_model;
  const table = m.weights && m.weights.position_table;
  const n = Math.min(s.n, SIM_MAX, table ? table[0] : Infinity);
  const noTable = ['alibi', 't5', 'none'].includes(m.scheme);
  let body, path;
  if (s.sim === 'cosine') {
    if (noTable) {
      simView.last = { s, m, n, res: null };
      drawSim();
      return;
    }
    path = 'encode';
    body = { model: m.name, shape: [n, dm], encoding: 'base64' };
  } else {
    path = 'apply';
    body = {
      model: m.name, embeddings: f32ToB64(new Float32Array(n * dm)), shape: [n, dm],
      return: ['scores'], encoding: 'base64',
    };
  }
  showRequest('sim-request', path, body);
  const res = await post(path, body, JSON.stringify([m.name, n, dm, s.sim]), signal);
  live(signal);
  simView.last = { s, m, n, res };
  drawSim();
}

function drawSim() {
  const v = simView.last;
  if (!v) return;
  const { s, m, n, res } = v;
  const t0 = performance.now();
  let mat, caption, vmin, vmax, clabel, head = 0;
  if (s.sim === 'cosine' && (!res || res.json.encoded === undefined)) {
    $('sim-caption').textContent = `Model ${m.name} uses ${m.scheme}, which adds no vector to the tokens: ` +
      'there is no encoding table to compare. Choose the scores measure to see the biases it adds.';
    setup($('sim'), 40);
    $('sim-status').textContent = 'Nothing requested.';
    return;
  }
  const j = res.json;
  if (s.sim === 'cosine') {
    const X = b64ToF32(j.encoded), d = j.encoded_shape[1];
    const norms = new Float64Array(n);
    for (let p = 0; p < n; p++) {
      let acc = 0;
      for (let c = 0; c < d; c++) acc += X[p * d + c] * X[p * d + c];
      norms[p] = Math.sqrt(acc) || 1;
    }
    mat = new Float32Array(n * n);
    for (let a = 0; a < n; a++) {
      for (let b = a; b < n; b++) {
        let acc = 0;
        const oa = a * d, ob = b * d;
        for (let c = 0; c < d; c++) acc += X[oa + c] * X[ob + c];
        mat[a * n + b] = mat[b * n + a] = acc / (norms[a] * norms[b]);
      }
    }
    vmin = -1; vmax = 1; clabel = 'cosine similarity';
    caption = `Model <b>${m.name}</b> (${m.scheme}, d_model ${m.d_model}, from ${m.source || "its weights"}): ` +
      `cosine similarity between the rows of its encoding table for positions 0…${n - 1}, ` +
      `cos(PE[i], PE[j]) = PE[i]·PE[j] / (|PE[i]| |PE[j]|), computed in the page from the table the server returned ` +
      `(POST /encode with the model and no embeddings). Its model weights play no part here.` +
      (m.scheme === 'rope' ? ' For RoPE the table is the cos/sin cache, not a vector added to tokens.' : '') +
      (m.scheme === 'sinusoidal' ? ' Each entry is a sum of cos((i − j)·ω) over the frequencies ω: ' +
        'it depends on i − j only, and nearby positions are alike.' : '');
  } else {
    const S = b64ToF32(j.scores), [H] = j.scores_shape;
    head = Math.min(s.head, H - 1);
    mat = S.subarray(head * n * n, (head + 1) * n * n);
    const a = maxAbs(mat) || 1;
    vmin = -a; vmax = a; clabel = 'score (pre-softmax)';
    const absolute = m.scheme === 'sinusoidal' || m.scheme === 'learned';
    caption = `Model <b>${m.name}</b> (${m.scheme}, ${m.heads} heads of ${m.head_dim}): head ${head}'s pre-softmax scores ` +
      `score_scale·q_i·k_j + bias[i][j] from POST /apply with all-zero token embeddings, so only position enters. No mask. ` +
      (absolute ? 'Here z = norm(PE): the encoding alone, projected by the model\'s own Wq and Wk (and biases). '
        : m.scheme === 'rope' ? 'RoPE adds nothing to a zero input: z = norm(0), q and k are the projection biases (if any) rotated by position, so without biases every score is 0. '
          : m.scheme === 'none' ? 'With no positional encoding nothing here depends on position. '
            : `z = norm(0), so the picture is the ${m.scheme === 't5' ? 'trained T5' : 'ALiBi'} bias itself (plus q·k of the projection biases, if any). `) +
      (m.name === 'default' ? 'The default model\'s weights are random (SplitMix64, Xavier-uniform): this shows how random projections see positions, not trained behaviour. ' : '');
  }
  if (s.n > n) caption += ` (Length capped at ${n}` + (n < SIM_MAX ? ', the model\'s position table' : '') + '.)';
  $('sim-caption').innerHTML = caption;
  heatmap($('sim'), {
    data: mat, rows: n, cols: n, vmin, vmax, map: RDBU, square: true, maxSide: 440,
    xlabel: 'position j', ylabel: 'position i', clabel,
    hover: (a, b, val) => `positions ${a}, ${b}: ${fmtVal(val)}`,
  });
  $('sim-status').textContent = `POST /${s.sim === 'cosine' ? 'encode' : 'apply'} → ${kb(res.bytes)} base64 in ${res.ms.toFixed(0)} ms; ` +
    `matrix ${n} × ${n}` + (s.sim === 'scores' ? ` (head ${head})` : '') + ` drawn in ${(performance.now() - t0).toFixed(0)} ms.`;
}

// ---------------------------------------------------------------- 7. multimodal rope
const COMPONENTS = ['t', 'h', 'w'];
const COMP_COLORS = ['#4e79a7', '#e15759', '#59a14f']; // t, h, w (rows, columns: h, w)
const MROPE_STYLES = ['chunked', 'interleaved', 'ernie'];
const PROBE3 = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]; // one token per component
const mmView = { last: null };

function mmSection(s) { return s.msec.split(',').map(Number); }
function mmLayoutOf(s) {
  const [t, h, w] = s.mimg.split(',').map(Number);
  const out = [];
  if (s.mtext) out.push({ text: s.mtext });
  out.push(t > 1 ? { video: [t, h, w] } : { image: [t, h, w] });
  if (s.mafter) out.push({ text: s.mafter });
  return out;
}
function mmParams(s, style) {
  const sec = mmSection(s);
  return { head_dim: 2 * (sec[0] + sec[1] + sec[2]), mrope: { section: sec, style } };
}

/* The component that turns each slot, read from the server's bare table of
 * the three probe tokens: row k = [cos of every slot | sin of every slot];
 * slot j turns by component k when token k's sine is not 0. */
function slotsFromProbe(table, half, tokens) {
  const out = [];
  for (let j = 0; j < half; j++) {
    let best = -1, big = 0;
    for (let k = 0; k < tokens; k++) {
      const v = Math.abs(table[k * 2 * half + half + j]);
      if (v > big) { big = v; best = k; }
    }
    out.push(best);
  }
  return out;
}

async function loadMm(s, signal) {
  const layout = mmLayoutOf(s), params = mmParams(s, 'chunked'), hd = params.head_dim;
  const [t, h, w] = s.mimg.split(',').map(Number);
  const tokens = s.mtext + s.mafter + t * (h / s.merge) * (w / s.merge);
  const body = {
    shape: [tokens, hd], scheme: 'rope', params, mm_layout: layout, merge: s.merge,
    mm_rule: s.mrule, encoding: 'base64',
  };
  showRequest('mm-request', 'encode', body);
  const sec = mmSection(s);
  const probe = (style) => (style === 'ernie' && sec[1] !== sec[2]) ? null
    : post('encode', { shape: [3, hd], scheme: 'rope', params: mmParams(s, style), positions: PROBE3, encoding: 'base64' },
      JSON.stringify(['mm-probe', s.msec, style]), signal);
  const [res, ...probes] = await Promise.all([
    post('encode', body, JSON.stringify(['mm', layout, s.merge, s.mrule, s.msec]), signal),
    ...MROPE_STYLES.map(probe)]);
  live(signal);
  const slots = {};
  MROPE_STYLES.forEach((style, i) => {
    slots[style] = probes[i] ? slotsFromProbe(b64ToF32(probes[i].json.encoded), hd / 2, 3) : null;
  });
  mmView.last = { s, layout, positions: res.json.positions, slots, hd, ms: res.ms, grid: [t, h / s.merge, w / s.merge] };
  drawMm();
}

/* Blocks of cells in token order: text runs wrap, each frame is its grid. */
function mmBlocks(v) {
  const blocks = [];
  let at = 0;
  for (const seg of v.layout) {
    if (seg.text) { blocks.push({ kind: 'text', from: at, count: seg.text }); at += seg.text; continue; }
    const [frames, gh, gw] = v.grid;
    for (let f = 0; f < frames; f++) {
      blocks.push({ kind: seg.video ? 'video' : 'image', frame: f, from: at, rows: gh, cols: gw });
      at += gh * gw;
    }
  }
  return blocks;
}

function mmCaption(b) {
  return b.kind === 'text' ? `text × ${b.count}` : `${b.kind} frame ${b.frame}`;
}

/* Places the blocks left to right at cell size cs; returns cells and height. */
function mmPlace(blocks, W, cs) {
  const cells = [], cap = 16, gap = 14;
  let x = 0, y = 0, rowH = 0;
  const maxCols = Math.max(1, Math.floor(W / cs));
  for (const b of blocks) {
    const cols = b.kind === 'text' ? Math.min(b.count, maxCols) : b.cols;
    const rows = b.kind === 'text' ? Math.ceil(b.count / maxCols) : b.rows;
    const bw = Math.max(cols * cs, 6.5 * mmCaption(b).length), bh = rows * cs + cap;
    if (x > 0 && x + bw > W) { x = 0; y += rowH + gap; rowH = 0; }
    b.x = x; b.y = y; b.w = bw;
    const n = b.kind === 'text' ? b.count : rows * cols;
    for (let i = 0; i < n; i++) {
      cells.push({ token: b.from + i, kind: b.kind, x: x + (i % cols) * cs, y: y + cap + Math.floor(i / cols) * cs });
    }
    x += bw + gap;
    rowH = Math.max(rowH, bh);
  }
  return { cells, height: y + rowH };
}

function drawMmTokens(v) {
  const cv = $('mm-tokens');
  const W = Math.max(200, cv.parentElement.clientWidth || 600) - 8;
  const blocks = mmBlocks(v);
  let cs = 44, placed = mmPlace(blocks, W, cs);
  while (cs > 6 && placed.height > 520) { cs -= 2; placed = mmPlace(blocks, W, cs); }
  const { ctx, dpr } = setup(cv, placed.height + 12);
  const labels = cs >= 40;
  const labelsDrawn = [];
  for (const b of blocks) {
    ctx.fillStyle = MUTED;
    ctx.font = SMALL;
    ctx.textAlign = 'left';
    ctx.textBaseline = 'bottom';
    ctx.fillText(mmCaption(b), 4 + b.x, 4 + b.y + 14);
  }
  for (const c of placed.cells) {
    const p = v.positions[c.token];
    ctx.fillStyle = c.kind === 'text' ? '#e4ebf5' : (p[0] % 2 ? '#fbd3a8' : '#fde8cf');
    ctx.fillRect(4 + c.x + 0.5, 4 + c.y + 0.5, cs - 1, cs - 1);
    ctx.strokeStyle = '#9aa3af';
    ctx.strokeRect(4 + c.x + 0.5, 4 + c.y + 0.5, cs - 1, cs - 1);
    const text = p.join(',');
    labelsDrawn.push(text);
    if (!labels) continue;
    ctx.fillStyle = INK;
    ctx.font = '10px system-ui, "DejaVu Sans", sans-serif';
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    ctx.fillText(text, 4 + c.x + cs / 2, 4 + c.y + cs / 2);
  }
  api.mm.labels = labelsDrawn;
  api.mm.cellSize = cs;
  api.mm.labelled = labels;
  api.mm.dpr = dpr;
}

function drawMmLines(v) {
  const n = v.positions.length;
  const comp = [0, 1, 2].map((k) => Float32Array.from(v.positions, (p) => p[k]));
  let hi = 1;
  for (const p of v.positions) hi = Math.max(hi, p[0], p[1], p[2]);
  lines($('mm-lines'), {
    height: 220, xmin: 0, xmax: Math.max(1, n - 1), ymin: 0, ymax: hi * 1.04, integerX: true,
    xlabel: 'token index', ylabel: 'position component',
    series: [
      { ys: comp[0], color: COMP_COLORS[0], width: 3.2, label: 't (time)' },
      { ys: comp[1], color: COMP_COLORS[1], width: 2, dash: [6, 3], label: 'h (row)' },
      { ys: comp[2], color: COMP_COLORS[2], width: 1.4, label: 'w (column)' },
    ],
  });
}

function drawMmStrips(v) {
  const cv = $('mm-strips');
  const half = v.hd / 2, lab = 96, rowH = 30, gap = 10;
  const W = Math.max(200, cv.parentElement.clientWidth || 600);
  const cw = Math.max(2, Math.min(28, Math.floor((W - lab - 10) / half)));
  const { ctx } = setup(cv, MROPE_STYLES.length * (rowH + gap) + 34);
  const cells = {};
  MROPE_STYLES.forEach((style, r) => {
    const y = r * (rowH + gap) + 4;
    ctx.fillStyle = INK;
    ctx.font = FONT;
    ctx.textAlign = 'left';
    ctx.textBaseline = 'middle';
    ctx.fillText(style, 4, y + rowH / 2);
    const comps = v.slots[style];
    if (!comps) {
      ctx.fillStyle = MUTED;
      ctx.fillText('needs s_h = s_w (ERNIE-4.5-VL)', lab, y + rowH / 2);
      cells[style] = null;
      return;
    }
    cells[style] = [];
    comps.forEach((k, j) => {
      const x = lab + j * cw;
      ctx.fillStyle = COMP_COLORS[k];
      ctx.fillRect(x, y, cw - (cw > 4 ? 1 : 0), rowH);
      cells[style].push({ x: x + cw / 2, y: y + rowH / 2 });
      if (cw >= 12) {
        ctx.fillStyle = '#fff';
        ctx.font = SMALL;
        ctx.textAlign = 'center';
        ctx.fillText(COMPONENTS[k], x + cw / 2, y + rowH / 2);
      }
    });
  });
  const ly = MROPE_STYLES.length * (rowH + gap) + 14;
  ctx.font = SMALL;
  ctx.textAlign = 'left';
  ctx.fillStyle = MUTED;
  ctx.fillText(`frequency slot j = 0 … ${half - 1} (slot j turns dimensions j and j + ${half}); colour: the component`, lab, ly);
  api.mm.stripCells = cells;
}

function drawMm() {
  const v = mmView.last;
  if (!v) return;
  api.mm = { positions: v.positions, slots: v.slots, state: v.s };
  const [t, gh, gw] = v.grid;
  const sec = mmSection(v.s);
  $('mm-caption').innerHTML =
    `A ${v.layout.map((g) => g.text ? `text of ${g.text}` : `${g.video ? 'video' : 'image'} of ${(g.video || g.image).join(' × ')} patches`).join(', then ')}` +
    ` (merge ${v.s.merge}: ${t} × ${gh} × ${gw} tokens), sent as <code>mm_layout</code> with <code>mm_rule: "${v.s.mrule}"</code>; ` +
    'each cell shows the token\'s position (t, h, w) as the server answered it. Text tokens have t = h = w; an image\'s tokens share t and count rows and columns from the block\'s start. ' +
    (v.s.mrule === 'qwen' ? 'Under "qwen" the text after a block starts one past the largest position so far.'
      : 'Under "hf" the text after a block starts at the block\'s start + max(h, w)/merge.') +
    ` Section [${sec.join(', ')}] (head_dim ${v.hd}): below, which component turns each frequency slot in each style.`;
  drawMmTokens(v);
  drawMmLines(v);
  drawMmStrips(v);
  $('mm-status').textContent = `POST /encode with mm_layout (${v.positions.length} tokens) in ${v.ms.toFixed(0)} ms, ` +
    'and the slot strips from each style\'s cos/sin table of three probe tokens [1,0,0], [0,1,0], [0,0,1].';
}

// ---------------------------------------------------------------- 8. 2-D rope of vision encoders
const VIT_TILES = 16;
const vitView = { last: null };
const PROBE2 = [[0, 0], [1, 0], [0, 1]]; // origin, one row down, one column across

/* Where slot j's cos and sin sit in a variant's bare table row of width D. */
function vitSlot(variant, D, j) {
  if (variant === 'llama4_vision') return [2 * j, 2 * j + 1];
  if (variant === 'gemma4_vision') {
    const q = D / 4, base = j < q ? 0 : D / 2, k = j % q;
    return [base + k, base + q + k];
  }
  return [j, D / 2 + j];
}
function vitAngle(table, variant, D, token, j) {
  const [c, s] = vitSlot(variant, D, j);
  return Math.atan2(table[token * D + s], table[token * D + c]);
}

async function loadVit(s, signal) {
  const D = s.vhd, pairs = [];
  for (let r = 0; r < s.gh; r++) for (let c = 0; c < s.gw; c++) pairs.push([r, c]);
  const params = { variant: s.variant, head_dim: D };
  const body = { shape: [pairs.length, D], scheme: 'rope2d', params, positions: pairs, encoding: 'base64' };
  showRequest('vit-request', 'encode', body);
  const [res, probe] = await Promise.all([
    post('encode', body, JSON.stringify(['vit', params, s.gh, s.gw]), signal),
    post('encode', { shape: [3, D], scheme: 'rope2d', params, positions: PROBE2, encoding: 'base64' },
      JSON.stringify(['vit-probe', params]), signal)]);
  live(signal);
  const table = b64ToF32(res.json.encoded), pt = b64ToF32(probe.json.encoded);
  const by = [];
  for (let j = 0; j < D / 2; j++) {
    const a0 = vitAngle(pt, s.variant, D, 0, j);
    by.push(Math.abs(vitAngle(pt, s.variant, D, 1, j) - a0) > 1e-9 ? 'row' : 'col');
  }
  vitView.last = { s, D, table, by, ms: res.ms + probe.ms };
  drawVit();
}

function drawVitStrip(v) {
  const cv = $('vit-strip');
  const half = v.D / 2, lab = 96;
  const W = Math.max(200, cv.parentElement.clientWidth || 600);
  const cw = Math.max(2, Math.min(28, Math.floor((W - lab - 10) / half)));
  const { ctx } = setup(cv, 70);
  ctx.font = FONT;
  ctx.fillStyle = INK;
  ctx.textAlign = 'left';
  ctx.textBaseline = 'middle';
  ctx.fillText(v.s.variant, 4, 19);
  v.by.forEach((b, j) => {
    ctx.fillStyle = b === 'row' ? COMP_COLORS[1] : COMP_COLORS[2];
    ctx.fillRect(lab + j * cw, 4, cw - (cw > 4 ? 1 : 0), 30);
  });
  ctx.font = SMALL;
  ctx.fillStyle = MUTED;
  ctx.fillText(`slot j = 0 … ${half - 1}: red turns by the row, green by the column`, lab, 52);
}

function vitShown(half) {
  if (half <= VIT_TILES) return Array.from({ length: half }, (_, j) => j);
  return Array.from({ length: VIT_TILES }, (_, i) => Math.round(i * (half - 1) / (VIT_TILES - 1)));
}

function drawVitMap(v) {
  const cv = $('vit-map');
  const { gh, gw, variant } = v.s;
  const shown = vitShown(v.D / 2);
  const w0 = Math.max(200, cv.parentElement.clientWidth || 600);
  const mr = 96, gap = 12, lab = 16;
  const perRow = Math.min(shown.length, 8);
  const tw = Math.min(160, Math.floor((w0 - mr - 10 - gap * (perRow - 1)) / perRow));
  const th = Math.max(8, Math.round(tw * gh / gw));
  const nRows = Math.ceil(shown.length / perRow);
  const { ctx, dpr } = setup(cv, nRows * (th + lab + gap) + 24);
  const data = new Float32Array(shown.length * gh * gw);
  shown.forEach((j, t) => {
    const [c] = vitSlot(variant, v.D, j);
    for (let i = 0; i < gh * gw; i++) data[t * gh * gw + i] = v.table[i * v.D + c];
  });
  const tilesAt = [];
  shown.forEach((j, t) => {
    const x = 4 + (t % perRow) * (tw + gap), y = Math.floor(t / perRow) * (th + lab + gap) + lab;
    const img = raster(ctx, data, t * gh * gw, gh, gw, Math.max(1, Math.round(tw * dpr)), Math.max(1, Math.round(th * dpr)), RDBU, -1, 1);
    ctx.putImageData(img, Math.round(x * dpr), Math.round(y * dpr));
    ctx.strokeStyle = '#9aa3af';
    ctx.strokeRect(x + 0.5, y + 0.5, tw - 1, th - 1);
    ctx.fillStyle = MUTED;
    ctx.font = SMALL;
    ctx.textAlign = 'left';
    ctx.textBaseline = 'bottom';
    ctx.fillText(`slot ${j} · ${v.by[j]}`, x, y - 2);
    tilesAt.push({ slot: j, x, y, w: tw, h: th });
    cv._regions.push({
      r: { x, y, w: tw, h: th }, rows: gh, cols: gw, data, off: t * gh * gw,
      hover: (r, c, val) => `slot ${j}: row ${r}, column ${c} → cos ${fmtVal(val)}`,
    });
  });
  ctx.fillStyle = MUTED;
  ctx.font = SMALL;
  ctx.textAlign = 'left';
  ctx.textBaseline = 'middle';
  ctx.fillText(`each tile: the ${gh} × ${gw} patch grid (row down, column across), cos of the slot's angle`, 4, nRows * (th + lab + gap) + 10);
  colorbar(ctx, 4 + perRow * (tw + gap) + 6, lab, 14, Math.max(80, Math.min(nRows * (th + lab + gap) - gap, 260) - lab), RDBU, -1, 1, 'cos(angle)');
  api.vit = { by: v.by, shown, data, tiles: tilesAt, grid: [gh, gw], D: v.D, variant, dpr };
}

const VIT_TEXT = {
  qwen_vit: 'f_j = θ^(−4j/D) for j < D/4; the first D/4 slots turn by the row, the next D/4 by the column (rotate-half).',
  pixtral: 'f_i = θ^(−2i/D); slot j < D/4 turns by row·f_2j, slot D/4 + j by column·f_(2j+1) (rotate-half).',
  llama4_vision: 'adjacent (complex) pairs; pair k < D/4 turns by (column + 1)·f_k, pair D/4 + k by (row + 1)·f_k.',
  gemma4_vision: 'the head splits in halves: the first a rotate-half rope of width D/2 by the column, the second by the row (base 100).',
};

function drawVit() {
  const v = vitView.last;
  if (!v) return;
  $('vit-caption').textContent = `scheme rope2d, variant ${v.s.variant}, head_dim ${v.D}, a ${v.s.gh} × ${v.s.gw} patch grid ` +
    `sent as [row, col] pairs: ${VIT_TEXT[v.s.variant]} Horizontal stripes: a slot turned by the row; vertical: by the column.`;
  drawVitStrip(v);
  drawVitMap(v);
  $('vit-status').textContent = `POST /encode (rope2d, the bare cos/sin table) ×2 in ${v.ms.toFixed(0)} ms; ` +
    'row or column per slot from the table of three probe patches (0,0), (1,0), (0,1).';
}

// ---------------------------------------------------------------- orchestration
const SECTIONS = [
  { name: 'table', load: loadTable, draw: drawTable, status: 'table-status', canvases: ['heatmap', 'lines'] },
  { name: 'rope', load: loadRope, draw: drawRope, status: 'rope-status', canvases: ['rope-circle', 'rope-dot'] },
  { name: 'bias', load: loadBias, draw: drawBias, status: 'bias-status', canvases: ['alibi-grid', 't5-grid'] },
  { name: 'sim', load: loadSim, draw: drawSim, status: 'sim-status', canvases: ['sim'] },
  { name: 'mm', load: loadMm, draw: drawMm, status: 'mm-status', canvases: ['mm-tokens', 'mm-lines', 'mm-strips'] },
  { name: 'vit', load: loadVit, draw: drawVit, status: 'vit-status', canvases: ['vit-strip', 'vit-map'] },
];

const api = { generation: 0, state: null, errors: [], timings: {} };
window.posencExplorer = api;

let controller = null, timer = 0, generation = 0;

function scheduleLoad() {
  clearTimeout(timer);
  document.body.dataset.status = 'loading';
  timer = setTimeout(loadAll, 80);
}

async function loadAll() {
  const gen = ++generation;
  if (controller) controller.abort();
  controller = new AbortController();
  const { signal } = controller;
  const s = state;
  document.body.dataset.status = 'loading';
  $('busy').textContent = 'computing…';
  $('busy').className = '';
  const t0 = performance.now();
  const errors = [];
  await Promise.all(SECTIONS.map(async (sec) => {
    const st = $(sec.status);
    st.classList.remove('err');
    try {
      await sec.load(s, signal);
    } catch (e) {
      if (gen !== generation || (e && e.name === 'AbortError')) return;
      errors.push(`${sec.name}: ${e.message}`);
      st.textContent = e instanceof ApiError ? e.message : `error: ${e.message}`;
      st.classList.add('err');
      for (const id of sec.canvases) setup($(id), 60);
    }
  }));
  if (gen !== generation) return;
  const ms = performance.now() - t0;
  $('busy').textContent = errors.length ? `${errors.length} view(s) failed: see the red lines` : `all views computed by this server in ${ms.toFixed(0)} ms`;
  $('busy').className = errors.length ? 'err' : '';
  api.generation = gen;
  api.state = Object.assign({}, s);
  api.errors = errors;
  api.timings.last = ms;
  document.body.dataset.generation = String(gen);
  document.body.dataset.status = errors.length ? 'error' : 'ready';
}

let resizeTimer = 0;
window.addEventListener('resize', () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => { for (const sec of SECTIONS) sec.draw(); }, 120);
});

// ---------------------------------------------------------------- 6. check my encoding
/* The subject the reader gave: {kind, arrays: {name: {data: Float32Array, shape}}}.
 * Pasted JSON or dropped .npy files; the claim comes from the view's controls. */
const checkView = { files: {}, last: null };

/* A .npy file (format 1.0-3.0) as {data: Float32Array, shape}: float32 or
 * float64, little-endian, C order. Throws a readable error otherwise. */
function parseNpy(buf, name) {
  const u8 = new Uint8Array(buf);
  const magic = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY
  if (u8.length < 10 || magic.some((b, i) => u8[i] !== b)) throw new Error(`${name}: not a .npy file`);
  const major = u8[6], dv = new DataView(buf);
  const hlen = major === 1 ? dv.getUint16(8, true) : dv.getUint32(8, true);
  const start = major === 1 ? 10 : 12;
  const header = new TextDecoder('latin1').decode(u8.subarray(start, start + hlen));
  const descr = /'descr':\s*'([^']*)'/.exec(header);
  const fortran = /'fortran_order':\s*(True|False)/.exec(header);
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shapeText) throw new Error(`${name}: unreadable .npy header`);
  if (fortran[1] === 'True') throw new Error(`${name}: Fortran order; save it with np.ascontiguousarray`);
  const shape = shapeText[1].split(',').map((x) => x.trim()).filter((x) => x).map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  const off = start + hlen;
  let data;
  if (descr[1] === '<f4') {
    data = new Float32Array(buf.slice(off, off + 4 * count));
  } else if (descr[1] === '<f8') {
    data = Float32Array.from(new Float64Array(buf.slice(off, off + 8 * count)));
  } else {
    throw new Error(`${name}: dtype ${descr[1]}; float32 (<f4) or float64 (<f8) only`);
  }
  if (data.length !== count) throw new Error(`${name}: the file is shorter than its shape ${shape}`);
  return { data, shape };
}

/* A nested JSON array as {data, shape}; rectangular only. */
function fromNested(v, name) {
  const shape = [];
  for (let x = v; Array.isArray(x); x = x[0]) shape.push(x.length);
  const flat = v.flat(Infinity);
  if (flat.length !== shape.reduce((a, b) => a * b, 1) || flat.some((x) => typeof x !== 'number')) {
    throw new Error(`${name}: not a rectangular array of numbers`);
  }
  return { data: Float32Array.from(flat), shape };
}

function checkArrays(kind) {
  const names = kind === 'cache' ? ['cos', 'sin'] : [kind];
  const text = $('k-text').value.trim();
  const out = {};
  if (text) {
    let v;
    try { v = JSON.parse(text); } catch (e) { throw new Error(`the pasted text is not JSON: ${e.message}`); }
    if (Array.isArray(v)) {
      if (kind === 'cache') throw new Error('paste {"cos": [...], "sin": [...]} for a cache');
      out[kind] = fromNested(v, kind);
    } else {
      for (const n of names) {
        if (!v || !Array.isArray(v[n])) throw new Error(`the pasted object has no "${n}" array`);
        out[n] = fromNested(v[n], n);
      }
    }
    return out;
  }
  for (const n of names) {
    const f = checkView.files[n] || (names.length === 1 ? Object.values(checkView.files)[0] : null);
    if (!f) throw new Error(names.length === 1 ? 'paste the array or drop a .npy file'
      : 'drop two .npy files whose names contain cos and sin');
    out[n] = f;
  }
  return out;
}

function checkClaim(kind, arrays) {
  const scheme = kind === 'table' ? 'sinusoidal' : kind === 'cache' ? 'rope' : 'alibi';
  const body = { scheme, encoding: 'base64', return_map: true };
  const params = {};
  if (scheme !== 'alibi') {
    params.base = Number($('k-base').value) || 10000;
    params.layout = $('k-layout').value;
  }
  const hd = Number($('k-headdim').value);
  /* batched arrays ([..., tokens, n], bias [..., heads, tokens, tokens]):
   * the last axes are read, the leading ones are batch rows */
  const last = (sh, k) => sh[sh.length - k];
  if (scheme === 'rope') params.head_dim = hd || last(arrays.cos.shape, 1);
  if (scheme === 'alibi') params.heads = last(arrays.bias.shape, 3);
  body.params = params;
  body.offset = Math.max(0, Math.floor(Number($('k-offset').value) || 0));
  return body;
}

function withSubject(body, arrays) {
  const b = Object.assign({}, body);
  for (const [n, a] of Object.entries(arrays)) {
    b[n] = f32ToB64(a.data);
    b[n + '_shape'] = a.shape;
  }
  return b;
}

/* error_map of an answer as {data, rows, cols}: a cache's cos rows then
 * its sin rows, a bias's heads one below the other. */
function errorMap(j) {
  const m = j.error_map, shapeOf = (o, k) => o[k + '_shape'];
  if (typeof m === 'string') {
    const shape = j.error_map_shape, data = b64ToF32(m);
    return { data, rows: data.length / shape[shape.length - 1], cols: shape[shape.length - 1] };
  }
  const cs = shapeOf(m, 'cos'), cols = cs[cs.length - 1];
  const c = b64ToF32(m.cos), s = b64ToF32(m.sin);
  const data = new Float32Array(c.length + s.length);
  data.set(c);
  data.set(s, c.length);
  return { data, rows: data.length / cols, cols };
}

function drawCheckMap(id, j, label) {
  const m = errorMap(j);
  const vmax = maxAbs(m.data) || 1e-7;
  heatmap($(id), {
    data: m.data, rows: m.rows, cols: m.cols, vmin: 0, vmax, map: VIRIDIS, height: 300,
    xlabel: 'column', ylabel: 'row', clabel: label,
    hover: (r, c, v) => `row ${r}, column ${c}: |error| ${fmtVal(v)}`,
  });
}

function esc(t) {
  return String(t).replace(/[&<>"]/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[ch]));
}

async function runCheck() {
  const kind = $('k-kind').value;
  const st = $('k-status');
  st.classList.remove('err');
  st.textContent = 'diagnosing…';
  document.body.dataset.check = 'loading';
  try {
    const arrays = checkArrays(kind);
    const claim = checkClaim(kind, arrays);
    const body = withSubject(claim, arrays);
    showRequest('k-request', 'diagnose', body);
    const ctl = new AbortController();
    const first = await post('diagnose', body, `check ${Math.random()}`, ctl.signal);
    const j = first.json;
    // the second request: the same subject under `best`, for its error map
    const best = j.best;
    const second = withSubject({
      scheme: best.scheme, params: best.params, encoding: 'base64', return_map: true,
      offset: best.offset !== undefined ? best.offset : undefined,
      positions: best.positions, embed_scale: best.scheme === 'sinusoidal' ? best.embed_scale : undefined,
    }, arrays);
    const again = await post('diagnose', second, `check best ${Math.random()}`, ctl.signal);
    checkView.last = { j, best: again.json };
    const v = $('k-verdict');
    v.textContent = j.verdict;
    v.className = `verdict ${j.verdict}`;
    $('k-findings').innerHTML = j.findings.length
      ? j.findings.map((f) => `<li><code>${esc(f.code)}</code> ${esc(f.message)}</li>`).join('')
      : `<li>no finding: max error ${fmtVal(j.claimed.max_abs_error)} under the claim</li>`;
    drawCheckMap('k-map-claim', j, '|error| under the claim');
    drawCheckMap('k-map-best', again.json, '|error| under best');
    st.textContent = `POST /diagnose ×2 in ${(first.ms + again.ms).toFixed(0)} ms: under the claim max error ` +
      `${fmtVal(j.claimed.max_abs_error)}, under best ${fmtVal(j.best.max_abs_error)}.`;
    document.body.dataset.check = 'ready';
  } catch (e) {
    st.textContent = e.message;
    st.classList.add('err');
    $('k-verdict').textContent = '';
    document.body.dataset.check = 'error';
  }
}

function bindCheck() {
  const layouts = () => {
    const list = $('k-kind').value === 'cache' ? LAYOUTS.rope : LAYOUTS.sinusoidal;
    $('k-layout').innerHTML = list.map((l) => `<option value="${l}">${l}</option>`).join('');
    $('k-layout').disabled = $('k-kind').value === 'bias';
  };
  $('k-kind').addEventListener('change', layouts);
  layouts();
  const take = async (files) => {
    checkView.files = {};
    const st = $('k-status');
    try {
      for (const f of files) {
        const a = parseNpy(await f.arrayBuffer(), f.name);
        const key = /sin/i.test(f.name) ? 'sin' : /cos/i.test(f.name) ? 'cos' : $('k-kind').value;
        checkView.files[key] = a;
      }
      $('k-text').value = '';
      st.classList.remove('err');
      st.textContent = 'loaded ' + Object.entries(checkView.files).map(([k, a]) => `${k} [${a.shape.join('][')}]`).join(', ');
    } catch (e) {
      st.textContent = e.message;
      st.classList.add('err');
    }
  };
  $('k-file').addEventListener('change', () => take($('k-file').files));
  const zone = $('k-drop');
  zone.addEventListener('dragover', (e) => { e.preventDefault(); zone.classList.add('over'); });
  zone.addEventListener('dragleave', () => zone.classList.remove('over'));
  zone.addEventListener('drop', (e) => {
    e.preventDefault();
    zone.classList.remove('over');
    take(e.dataTransfer.files);
  });
  $('k-run').addEventListener('click', runCheck);
}
api.parseNpy = parseNpy;

bindControls();
bindHover();
bindCheck();
syncControls();
history.replaceState(null, '', stateToQuery(state));
scheduleLoad();
})();
