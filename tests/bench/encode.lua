-- encode.lua - wrk script for POST /encode.
--
--   wrk -t2 -c32 -d30s --latency -s tests/bench/encode.lua http://HOST:8080
--   wrk ... -s tests/bench/encode.lua http://HOST:8080 -- body.json
--
-- Default body: {"embeddings": 16 x 64 numbers} (scenario S1 of make bench).
-- Any other /encode body: pass its file after "--" (or set
-- POSENC_BENCH_BODY=FILE). A URL with a path of its own overrides /encode.
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
local common = dofile(here .. "bench_common.lua")

common.setup("/encode", function()
   return '{"embeddings":' .. common.embeddings_json(16, 64) .. '}'
end)
