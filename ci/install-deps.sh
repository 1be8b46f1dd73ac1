#!/usr/bin/env bash
# Installs everything HotspotLab needs on Debian 12 (as root): the netlink libraries, the daemons the lab
# runs, and what the VM runner boots (qemu, a distribution kernel with mac80211_hwsim, busybox).
# Idempotent: skips apt when every package is already installed.
set -euo pipefail
packages=(
  pkg-config libnl-3-dev libnl-genl-3-dev libmnl-dev libssl-dev openssl
  # the system trust store (the portal-https-untrusted scenario's helper trusts only it)
  ca-certificates
  iproute2 nftables iw hostapd wpasupplicant dnsmasq-base curl tcpdump kmod cpio
  qemu-system-x86 linux-image-amd64 busybox-static python3-yaml
  # IPv6 hotspots: NAT64 (tayga) and DNS64 (unbound) of v6-only LANs; dhcpcd is the root tests' RA and DHCPv6 client
  tayga unbound dhcpcd-base
  # headless browser for the HTML report's rendering test (Tests/LabKitTests/HTMLReportTests.swift)
  chromium
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: must run as root to apt-get install: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all ${#packages[@]} packages present"
fi
