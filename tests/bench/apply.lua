-- apply.lua - wrk script for POST /apply (Q, K, V).
--
--   wrk -t2 -c8 -d30s --latency -s tests/bench/apply.lua http://HOST:8080
--   wrk ... -s tests/bench/apply.lua http://HOST:8080 -- body.json
--
-- Default body: {"embeddings": 128 x 512 numbers} for the built-in default
-- model (scenario S2 of make bench). Any other /apply body (base64, inline
-- models, "return": [...]): pass its file after "--" (or set
-- POSENC_BENCH_BODY=FILE). A URL with a path of its own overrides /apply.
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
local common = dofile(here .. "bench_common.lua")

common.setup("/apply", function()
   return '{"embeddings":' .. common.embeddings_json(128, 512) .. '}'
end)
