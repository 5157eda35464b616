-- The client of the steering rounds: like wrk-json.lua (the same one-line
-- JSON summary), but every request carries an `x-user` header cycling
-- through USERS values, so `STEERING=hash` with HASH_KEY=header:x-user sees
-- many keys and spreads them over both origins, as real clients would make
-- it. Every target of those rounds gets these same requests (the floors and
-- the other policies ignore the header), so wrk's own cost is the same in
-- every row. Headers given with -H (run.sh's affinity cookie) ride along.
--
-- The requests are formatted once per thread in init(): formatting one per
-- request would cost wrk CPU on a 2-core machine where wrk and workerd
-- compete for it.
local USERS = 64
local prepared = {}
local next_index = 0

init = function(args)
  for i = 1, USERS do
    local headers = {}
    for name, value in pairs(wrk.headers) do headers[name] = value end
    headers["x-user"] = "user-" .. i
    prepared[i] = wrk.format(nil, nil, headers)
  end
end

request = function()
  next_index = next_index % USERS + 1
  return prepared[next_index]
end

-- The summary line: wrk-json.lua's `done`, loaded from next to this file.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "wrk-json.lua")
