-- POST /documents with a unique id per request (run time, thread, counter: ids stay new
-- across the runs of one load test).
local words = {"stroke", "aspirin", "trial", "risk", "patients", "blood", "pressure",
  "care", "study", "effect", "cohort", "outcome", "randomised", "analysis", "review"}
local counter, prefix = 0, ""
setup = function(thread)
  thread:set("prefix", os.time() .. "-" .. math.random(1e9))
end
init = function(args)
  prefix = wrk.thread:get("prefix") or tostring(math.random(1e9))
end
request = function()
  counter = counter + 1
  local t = {}
  for j = 1, 60 do t[j] = words[math.random(#words)] .. (math.random(50)) end
  local body = '{"id": "load-' .. prefix .. '-' .. counter .. '", "text": "' .. table.concat(t, " ") .. '"}'
  return wrk.format("POST", "/documents", {["Content-Type"] = "application/json"}, body)
end
