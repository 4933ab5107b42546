"""``agent dev --encrypt``: the embedded stack with payloads encrypted, and the Temporal UI decoding
them through a codec server (``agent codec-server``'s) that ``agent dev`` serves itself.

The keys are ``AGENT_PAYLOAD_KEYS`` when the environment sets it; else a development key made once
and kept in ``DATA_DIR/payload-keys`` (mode 0600), so runs stored by an earlier start stay
readable. Only that generated key goes into env.sh; a key of your own stays in your environment.
"""

from __future__ import annotations

import os
from pathlib import Path

from agent.dev.ports import LOOPBACK, ensure_port_free
from core.codec import KEYS_ENV, new_payload_key
from core.settings import get_settings

#: File under the data directory holding the generated development key (``dev:BASE64``).
KEY_FILE = "payload-keys"


def dev_payload_keys(data_dir: Path) -> tuple[str, bool]:
    """The keys ``agent dev --encrypt`` uses, and whether they are the generated development key
    (which env.sh may carry) rather than the environment's ``AGENT_PAYLOAD_KEYS``.

    :raises core.settings.SettingsError: When ``AGENT_PAYLOAD_KEYS`` (or the key file) is malformed.
    """
    own = get_settings().payload_keys
    if own is not None:
        return own.get_secret_value(), False
    path = data_dir / KEY_FILE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(f"dev:{new_payload_key()}\n")
    return path.read_text().strip(), True


def ui_origins(ui_port: int) -> list[str]:
    """The origins a browser shows the dev server's UI under."""
    return [f"http://{LOOPBACK}:{ui_port}", f"http://localhost:{ui_port}"]


def codec_endpoint(port: int) -> str:
    """The codec server's URL for the UI, after checking its port is free.

    :raises agent.dev.processes.DevServerError: When the port is taken.
    """
    ensure_port_free(port, "the codec server", hint="Choose another with --codec-port N.")
    return f"http://{LOOPBACK}:{port}"


__all__ = ["KEYS_ENV", "KEY_FILE", "codec_endpoint", "dev_payload_keys", "ui_origins"]
