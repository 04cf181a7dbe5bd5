-- Argo CD health check for provider-cloudarmor: every kind in armorplane.io
-- and *.armorplane.io (SecurityPolicy, SecurityPolicyRule, ProviderConfig,
-- ClusterProviderConfig, ProviderConfigUsage). docs/gitops.md shows where it
-- goes; test/argocd runs this file against objects a live provider wrote.
--
--   Degraded     Synced=False, with its message (create/update/delete failed,
--                GCP refused the policy, quota, credentials, ...), or
--                RuleConflict=True (an inline rule the spec declares is not
--                applied because a SecurityPolicyRule claims its priority)
--   Healthy      Ready=True; a (Cluster)ProviderConfig or usage, which have no
--                Ready or Synced: only status.users
--   Progressing  anything else: no status yet, Creating, Deleting, a
--                ProviderConfig whose deletion waits for its users
local hs = { status = "Progressing", message = "Waiting for the provider to reconcile" }

local conditions = {}
if obj.status ~= nil and obj.status.conditions ~= nil then
  conditions = obj.status.conditions
end

local function condition(type)
  for _, c in ipairs(conditions) do
    if c.type == type then
      return c
    end
  end
  return nil
end

local function describe(c)
  if c.message ~= nil and c.message ~= "" then
    return c.message
  end
  if c.reason ~= nil then
    return c.reason
  end
  return c.type .. " is " .. c.status
end

local configKinds = {
  ProviderConfig = true,
  ClusterProviderConfig = true,
  ProviderConfigUsage = true,
  ClusterProviderConfigUsage = true,
}
if configKinds[obj.kind] then
  local terminating = condition("Terminating")
  if terminating ~= nil and terminating.status == "True" then
    hs.message = describe(terminating)
    return hs
  end
  hs.status = "Healthy"
  if obj.kind == "ProviderConfig" or obj.kind == "ClusterProviderConfig" then
    local users = 0
    if obj.status ~= nil and obj.status.users ~= nil then
      users = obj.status.users
    end
    hs.message = "Used by " .. users .. " managed resource(s)"
  else
    hs.message = ""
  end
  return hs
end

local synced = condition("Synced")
if synced ~= nil and synced.status == "False" then
  hs.status = "Degraded"
  hs.message = describe(synced)
  return hs
end

local conflict = condition("RuleConflict")
if conflict ~= nil and conflict.status == "True" then
  hs.status = "Degraded"
  hs.message = describe(conflict)
  return hs
end

local ready = condition("Ready")
if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = describe(ready)
  return hs
end
if ready ~= nil then
  hs.message = describe(ready)
end
return hs
