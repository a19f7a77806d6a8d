"""Files the suite reads from pinned sources: fetched once into eval/domains/cache/, and refused
unless their sha256 is the one pinned."""
import hashlib
import os
import sys


def pinned(cache, sha256, fetch, name):
    """The bytes cached at `cache`, else those `fetch()` gets (then cached); the process stops
    unless their sha256 is `sha256`. `name` names the file in the message."""
    if os.path.exists(cache):
        data = open(cache, 'rb').read()
    else:
        data = fetch()
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        sys.exit(f'error: {name} has sha256 {digest}, expected {sha256}: the source changed or '
                 'the download broke; delete eval/domains/cache and retry')
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    if not os.path.exists(cache):
        open(cache, 'wb').write(data)
    return data
