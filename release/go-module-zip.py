"""Write a Go module's source archive (the zip a Go module proxy serves) from the NUL-separated
file list on stdin (`git ls-files -z DIR`): every file under DIR, as MODULE@VERSION/<path in DIR>.

    git ls-files -z bindings-go | python3 go-module-zip.py ROOT DIR MODULE@VERSION OUT.zip

Go's rules for the archive: paths under the module@version prefix, no nested modules (a
folder with a go.mod of its own), no vendor/ folder; files are stored as they are.
"""

import os
import sys
import zipfile

root, folder, prefix, out = sys.argv[1:5]
paths = [p for p in sys.stdin.read().split("\0") if p]
folder = folder.rstrip("/") + "/"
nested = {os.path.dirname(p) + "/" for p in paths if p.endswith("/go.mod") and p != folder + "go.mod"}
count = 0
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
    for path in sorted(paths):
        inside = path[len(folder):]
        if not path.startswith(folder) or inside.startswith("vendor/"):
            continue
        if any(path.startswith(n) for n in nested):
            continue
        full = os.path.join(root, path)
        if not os.path.isfile(full):  # deleted in the working tree
            continue
        archive.write(full, f"{prefix}/{inside}")
        count += 1
if count == 0 or f"{prefix}/go.mod" not in zipfile.ZipFile(out).namelist():
    sys.exit(f"go-module-zip.py: no go.mod under {folder}")
print(f"{out}: {count} files")
