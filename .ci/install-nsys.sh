#!/usr/bin/env bash
# Install Nsight Systems (Debian non-free, 2022.4) when nsys is not on PATH. See docs/design.md.
set -euo pipefail
if command -v nsys >/dev/null 2>&1; then exit 0; fi
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
# The Debian mirror this machine already uses (URIs: lines of deb822 sources, or classic deb lines).
mirror=$( { grep -rhE '^URIs:' /etc/apt/sources.list.d/ 2>/dev/null | awk '{print $2}';
            grep -rhE '^deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}'; } \
          | grep -E '/debian/?$' | grep -v security | head -n1 || true)
mirror=${mirror:-http://deb.debian.org/debian}
$SUDO tee /etc/apt/sources.list.d/non-free.sources >/dev/null <<SRC
Types: deb
URIs: ${mirror}
Suites: bookworm
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends nsight-systems >/dev/null
command -v nsys
