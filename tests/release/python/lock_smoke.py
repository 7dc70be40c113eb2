"""Run by tests/release/run-tests.sh in a fresh venv that has only the released wheel:
take a lock on SQLite and on Redis through it and check the version it reports.

    python lock_smoke.py VERSION NAME URL...
"""

import sys

import polylock

version, name, urls = sys.argv[1], sys.argv[2], sys.argv[3:]
if polylock.__version__ != version:
    sys.exit(f"polylock.__version__ is {polylock.__version__}, expected {version}")
if "site-packages" not in polylock.__file__:
    sys.exit(f"polylock was imported from {polylock.__file__}, not from the venv's site-packages")
for url in urls:
    with polylock.connect(url) as client:
        lock = client.lock(name)
        with lock:
            token = lock.fencing_token
            assert isinstance(token, int) and token > 0, token
            assert lock.locked()
        assert not lock.locked()
    print(f"python: polylock {polylock.__version__}: locked and released on {url.split(':')[0]} (token {token})")
