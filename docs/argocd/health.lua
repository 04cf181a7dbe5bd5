-- Argo CD health check for provider-cloudarmor: every kind in armorplane.io
-- and *.armorplane.io (SecurityPolicy, SecurityPolicyRule, ProviderConfig,
-- ClusterProviderConfig, ProviderConfigUsage, and the Configuration's
-- IPAllowlist in platform.armorplane.io). docs/gitops.md shows where it goes;
-- test/argocd runs this file against objects a live provider and Crossplane
-- wrote.
--
--   Suspended    the crossplane.io/paused annotation is "true", or Synced says
--                ReconcilePaused (also managementPolicies: []): nothing is
--                reconciled, on purpose, so it is neither Degraded nor Healthy
--   Progressing  the conditions describe an older metadata.generation than the
--                object has (an edit the provider has not seen yet), no status
--                yet, Creating, Deleting, an XR's composed resources not ready,
--                a ProviderConfig whose deletion waits for its users
--   Degraded     Synced=False, with its message (create/update/delete failed,
--                GCP refused the policy, quota, credentials, ...),
--                RuleConflict=True (an inline rule the spec declares is not
--                applied because a SecurityPolicyRule claims its priority), or
--                Current=False SourceUnreadable (an IPAllowlist whose cluster,
--                project or Secret cannot be read: GCP keeps that source's last
--                addresses, which may be stale until someone looks)
--   Healthy      Ready=True (observe-only resources say so in the message); a
--                (Cluster)ProviderConfig or usage, which have no Ready or
--                Synced: only status.users
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

-- Paused first: a paused object keeps whatever it said before, stale or not.
local paused = obj.metadata.annotations ~= nil and obj.metadata.annotations["crossplane.io/paused"] == "true"
if paused or (synced ~= nil and synced.reason == "ReconcilePaused") then
  hs.status = "Suspended"
  hs.message = "Reconciliation is paused"
  if paused then
    hs.message = hs.message .. " (crossplane.io/paused: \"true\")"
  elseif synced.message ~= nil and synced.message ~= "" then
    hs.message = synced.message
  end
  return hs
end

-- Synced is written on every reconcile with the generation it saw: older than
-- the object means the last edit is not reflected in any condition yet.
local generation = obj.metadata.generation
if synced ~= nil and synced.observedGeneration ~= nil and generation ~= nil and synced.observedGeneration < generation then
  hs.message = "Waiting for generation " .. generation .. " to be reconciled (conditions are of generation " ..
    synced.observedGeneration .. ")"
  return hs
end

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

local current = condition("Current")
if current ~= nil and current.status == "False" and current.reason == "SourceUnreadable" then
  hs.status = "Degraded"
  hs.message = describe(current)
  return hs
end

local ready = condition("Ready")
if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = describe(ready)
  local policies = obj.spec ~= nil and obj.spec.managementPolicies or nil
  if policies ~= nil and #policies == 1 and policies[1] == "Observe" then
    hs.message = "Observe only: " .. hs.message
  end
  return hs
end
if ready ~= nil then
  hs.message = describe(ready)
end
return hs
