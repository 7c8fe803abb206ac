-- mix.lua - wrk script for the soak test: a fixed cycle of valid and
-- malformed requests, each with the status it must get.
--
--   wrk -t2 -c16 -d25s -s tests/soak/mix.lua http://127.0.0.1:PORT
--
-- Every thread walks the same cycle. wrk cannot tell which request a
-- response answers, so the check is on the statuses as a whole: done()
-- prints one line per status seen and the count of statuses outside the
-- cycle's set ("SOAK status 200 1234", "SOAK unexpected 0"), and whether
-- each status came back in its share of the cycle ("SOAK off_share 0"),
-- which tests/soak/run.sh reads. A 500, any status outside the set, or a
-- share that is off (a malformed request answered 200, say) fails it.
--
-- Requests that end their connection on purpose (413 before the body,
-- a body shorter than Content-Length) are kept out of the cycle: wrk
-- counts those as socket errors. tests/soak/faults.py sends them instead.

-- base64 of n float32 zeros ("AAAA" is 3 zero bytes; 4*n bytes in all)
local function b64_zeros(n)
   local bytes = 4 * n
   local full = math.floor(bytes / 3)
   local rest = bytes % 3
   local s = string.rep("AAAA", full)
   if rest == 1 then
      s = s .. "AA=="
   elseif rest == 2 then
      s = s .. "AAA="
   end
   return s
end

local function rows(tokens, d, v)
   local row = {}
   for i = 1, d do
      row[i] = string.format("%.3f", v + i / 1000)
   end
   local r = "[" .. table.concat(row, ",") .. "]"
   local out = {}
   for t = 1, tokens do
      out[t] = r
   end
   return "[" .. table.concat(out, ",") .. "]"
end

local function nested(depth)
   return '{"x":' .. string.rep("[", depth) .. "1" .. string.rep("]", depth) .. "}"
end

local JSON = "application/json"

-- {method, path, content type, body, expected status}
local cycle = {
   {"POST", "/encode", JSON, '{"embeddings":' .. rows(8, 16, 0.5) .. '}', 200},
   {"POST", "/encode", JSON, '{"shape":[32,64],"scheme":"rope","params":{"head_dim":16}}', 200},
   {"POST", "/encode", JSON, '{"shape":[4,16,8],"encoding":"base64","offset":1000000}', 200},
   {"POST", "/apply", JSON, '{"embeddings":"' .. b64_zeros(4 * 512) .. '","shape":[4,512]}', 200},
   {"POST", "/apply", JSON, '{"embeddings":' .. rows(2, 512, 0.25) .. ',"return":["q","scores"]}', 200},
   {"POST", "/encode", JSON, '{"scheme":"alibi","params":{"heads":4},"shape":[16,1]}', 200},
   {"GET", "/healthz", nil, nil, 200},
   {"GET", "/metrics", nil, nil, 200},
   -- malformed JSON, wrong types, unknown fields
   {"POST", "/encode", JSON, '{"shape":[2,4],', 400},
   {"POST", "/apply", JSON, '{"embeddings":[[1,2]],}', 400},
   {"POST", "/encode", JSON, '{"shape":"2x4"}', 400},
   {"POST", "/encode", JSON, '{"shape":[2,4],"offset":"7"}', 400},
   {"POST", "/encode", JSON, '{"shape":[2,4],"bogus":true}', 400},
   {"POST", "/encode", JSON, '[1,2,3]', 400},
   {"POST", "/encode", JSON, '', 400},
   -- truncated bodies (whole, but cut mid-JSON)
   {"POST", "/encode", JSON, '{"embeddings":[[1,2],[3,4]', 400},
   {"POST", "/apply", JSON, '{"embeddings":"AAAA', 400},
   -- bad base64
   {"POST", "/encode", JSON, '{"embeddings":"AAA*","shape":[1,1]}', 400},
   {"POST", "/encode", JSON, '{"embeddings":"AAAAAAA=","shape":[1,1]}', 400},
   -- oversized declared shapes, ragged, non-finite, past limits
   {"POST", "/encode", JSON, '{"shape":[100000,100000]}', 422},
   {"POST", "/encode", JSON, '{"shape":[2000,1,1]}', 422},
   {"POST", "/encode", JSON, '{"embeddings":"AAAAAA==","shape":[1000000,1000000]}', 422},
   {"POST", "/encode", JSON, '{"embeddings":[[1,2],[3]]}', 422},
   {"POST", "/encode", JSON, '{"embeddings":"AACAfw==","shape":[1,1]}', 422},
   {"POST", "/encode", JSON, nested(40), 422},
   {"POST", "/apply", JSON, '{"embeddings":[[1,2]],"model":"nope"}', 404},
   -- routes, methods, media types
   {"GET", "/nope", nil, nil, 404},
   {"POST", "/encode/../etc/passwd", JSON, '{}', 404},
   {"DELETE", "/encode", nil, nil, 405},
   {"GET", "/apply", nil, nil, 405},
   {"POST", "/encode", "text/plain", '{"shape":[2,4]}', 415},
   {"POST", "/encode", nil, '{"shape":[2,4]}', 415},
}

local expected = {} -- status -> how many entries of the cycle expect it
for _, c in ipairs(cycle) do
   expected[c[5]] = (expected[c[5]] or 0) + 1
end

local requests = {}
local counter = 0
statuses = {}
unexpected = 0

function init(args)
   for i, c in ipairs(cycle) do
      local headers = {}
      if c[3] then
         headers["Content-Type"] = c[3]
      end
      requests[i] = wrk.format(c[1], c[2], headers, c[4])
   end
   counter = math.random(#cycle) - 1
end

function request()
   counter = counter % #cycle + 1
   return requests[counter]
end

function response(status, headers, body)
   statuses[status] = (statuses[status] or 0) + 1
   if not expected[status] then
      unexpected = unexpected + 1
   end
end

local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

function done(summary, latency, reqs)
   local total = {}
   local bad = 0
   for _, t in ipairs(threads) do
      local st = t:get("statuses")
      for k, v in pairs(st) do
         total[k] = (total[k] or 0) + v
      end
      bad = bad + t:get("unexpected")
   end
   -- Each thread walks the cycle in order, so every status must come back
   -- in its share of the cycle, up to the requests still open at the end.
   local answered = 0
   for _, v in pairs(total) do
      answered = answered + v
   end
   local off = 0
   for k, n in pairs(expected) do
      local want = answered * n / #cycle
      local got = total[k] or 0
      local slack = 0.02 * answered + 64
      if math.abs(got - want) > slack then
         off = off + 1
         io.write(string.format("SOAK share %d got %d want %.0f +- %.0f\n", k, got, want, slack))
      end
   end
   for k, v in pairs(total) do
      io.write(string.format("SOAK status %d %d\n", k, v))
   end
   io.write(string.format("SOAK off_share %d\n", off))
   local e = summary.errors
   io.write(string.format("SOAK requests %d\n", summary.requests))
   io.write(string.format("SOAK unexpected %d\n", bad))
   io.write(string.format("SOAK socket_errors %d %d %d %d %d\n", e.connect, e.read, e.write,
                          e.timeout, e.status))
end
