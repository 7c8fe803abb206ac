-- bench_common.lua - shared by the posenc wrk scripts (encode.lua, apply.lua).
--
-- Body: the file named by the first script argument (wrk ... -- FILE), else
-- by $POSENC_BENCH_BODY, else the script's built-in default. Requests are
-- POSTs with Content-Type: application/json to the script's route, unless
-- the URL given to wrk has a path of its own.
-- With $POSENC_BENCH_JSON set, done() also prints one machine-readable line,
-- "POSENC_BENCH {...}", that tests/bench/bench.py reads.
local M = {}

function M.read_file(path)
   local f, err = io.open(path, "rb")
   if not f then
      error("posenc bench: cannot read body file: " .. tostring(err))
   end
   local s = f:read("*a")
   f:close()
   return s
end

-- Deterministic embeddings [tokens][d] as JSON, values in (-1, 1) with
-- float32-like digit counts (a 31-bit LCG, seed fixed).
function M.embeddings_json(tokens, d)
   local state = 12345
   local rows = {}
   for t = 1, tokens do
      local row = {}
      for i = 1, d do
         state = (state * 1103515245 + 12345) % 2147483648
         row[i] = string.format("%.8g", state / 1073741824 - 1)
      end
      rows[t] = "[" .. table.concat(row, ",") .. "]"
   end
   return "[" .. table.concat(rows, ",") .. "]"
end

function M.setup(route, default_body)
   wrk.method = "POST"
   wrk.headers["Content-Type"] = "application/json"
   if wrk.path == nil or wrk.path == "" or wrk.path == "/" then
      wrk.path = route
   end
   -- wrk calls init(args) in every thread before it formats the request.
   init = function(args)
      local path = (args and args[1]) or os.getenv("POSENC_BENCH_BODY")
      if path and path ~= "" then
         wrk.body = M.read_file(path)
      else
         wrk.body = default_body()
      end
   end
   done = function(summary, latency, requests)
      if not os.getenv("POSENC_BENCH_JSON") then
         return
      end
      local e = summary.errors
      io.write(string.format(
         "POSENC_BENCH {\"duration_us\":%d,\"requests\":%d,\"bytes\":%d," ..
         "\"err_connect\":%d,\"err_read\":%d,\"err_write\":%d," ..
         "\"err_status\":%d,\"err_timeout\":%d,\"lat_mean_us\":%.1f," ..
         "\"lat_p50_us\":%d,\"lat_p90_us\":%d,\"lat_p99_us\":%d," ..
         "\"lat_max_us\":%d}\n",
         summary.duration, summary.requests, summary.bytes,
         e.connect, e.read, e.write, e.status, e.timeout, latency.mean,
         latency:percentile(50), latency:percentile(90),
         latency:percentile(99), latency.max))
   end
end

return M
