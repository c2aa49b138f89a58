# The two commands a newcomer needs: `make demo` and `make test` (README).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8000

# Tests run against the real services on this machine (DESIGN §7).
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/gpuplatform
TEST_REDIS_URL    ?= redis://127.0.0.1:6379/15
PYTEST_WORKERS    ?= 2

.PHONY: setup demo test lint format services system-deps check-deploy clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

setup: $(VENV)/.installed

demo: setup
	$(BIN)/python manage.py demo --port $(PORT)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .
	$(BIN)/lint-imports

format: setup
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

system-deps:
	bash scripts/ensure-system-deps.sh

services:
	bash scripts/ensure-services.sh

test: setup system-deps services lint
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) \
	  $(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

check-deploy: setup
	GPUPLATFORM_SECURE=1 SECRET_KEY=$$(head -c 48 /dev/urandom | base64) ALLOWED_HOSTS=gpu.example.com \
	  POLICY_SIGNING_KEY="$$($(BIN)/python -c 'from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey as K; from cryptography.hazmat.primitives import serialization as s; print(K.generate().private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption()).decode())')" \
	  DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) \
	  $(BIN)/python manage.py check --deploy --fail-level WARNING

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache .mypy_cache .ruff_cache
