# The compose deployment from a checkout (docs/operating.md "Installing"):
#
#   make dev    the whole stack on this machine, sandboxd included (the compose profile `sandbox`):
#               a laptop, or a single host that runs its own sandboxes
#   make prod   the console and PostgreSQL only; the sandboxes run on other hosts (connections)
#
# Each makes `.env` from `.env.example` first if there is none (new secrets, never printed; see
# scripts/quickstart.sh --env-only), then runs scripts/deploy.sh, which builds the console image,
# migrates, replaces what changed and waits until it is healthy. DEPLOY_FLAGS passes options to it
# (`make prod DEPLOY_FLAGS=--no-pull`).

DEPLOY_FLAGS ?=

.PHONY: dev prod

dev: .env
	scripts/deploy.sh $(DEPLOY_FLAGS)

prod: .env
	scripts/deploy.sh --no-sandbox $(DEPLOY_FLAGS)

.env:
	scripts/quickstart.sh --env-only
