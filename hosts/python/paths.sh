# Sourced by package.sh and typecheck.sh: where the package's build lives
# (one place, since typecheck.sh installs the wheel package.sh left there)
# and pip's flags. Needs HERE, the folder of the sourcing script.
REPO="$(cd "$HERE/../.." && pwd)"
out="$REPO/target/python-package"
wheels="$out/wheels"
pip=(--disable-pip-version-check -q)
