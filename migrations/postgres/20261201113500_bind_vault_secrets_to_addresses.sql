-- A vault key is sent only to the address it was saved for (issue 8). `bound_address` is that
-- address as connections store it (no trailing slash); `local` for this deployment's own token
-- (any of SANDBOXD_LOCAL_ADDRESSES); NULL until the key is first saved with or sent to an address.
ALTER TABLE vault_secrets ADD COLUMN bound_address TEXT;

-- Keys already in use are bound to the one address their connections name (a key shared by
-- connections at different addresses stays unbound: no address is sent it until it is saved again).
UPDATE vault_secrets SET bound_address = (
    SELECT MIN(c.address) FROM sandbox_connections c
    WHERE c.credential_secret_id = vault_secrets.id AND c.organization_id = vault_secrets.organization_id
) WHERE (
    SELECT COUNT(DISTINCT c.address) FROM sandbox_connections c
    WHERE c.credential_secret_id = vault_secrets.id AND c.organization_id = vault_secrets.organization_id
) = 1;
