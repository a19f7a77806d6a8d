-- POST /similar with texts drawn from a fixed set of generated-looking documents.
local texts = {}
local words = {"stroke", "aspirin", "trial", "risk", "patients", "blood", "pressure",
  "care", "study", "effect", "cohort", "outcome", "randomised", "analysis", "review"}
math.randomseed(7)
for i = 1, 200 do
  local t = {}
  for j = 1, 60 do t[j] = words[math.random(#words)] .. (math.random(50)) end
  texts[i] = '{"text": "' .. table.concat(t, " ") .. '"}'
end
local n = 0
request = function()
  n = n + 1
  return wrk.format("POST", "/similar", {["Content-Type"] = "application/json"}, texts[n % #texts + 1])
end
