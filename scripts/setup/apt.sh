# Sourced by the setup scripts: one way to install Debian packages.
# apt_install_missing LABEL PKG… installs the packages that are not installed yet: without recommends,
# waiting for the apt lock, running `apt-get update` only when the first attempt fails, and never
# starting the packages' services on this machine (policy-rc.d: the tests start their own, in namespaces),
# one setup at a time on the machine (apt_locked, below).
apt_install_missing() {
  local label=$1 p
  shift
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  [ "$(id -u)" = 0 ] || { echo "$label: need root to install ${missing[*]}" >&2; return 1; }
  apt_locked _apt_install "$label" "${missing[@]}"
}

_apt_install() {
  local label=$1 own_policy=0
  shift
  local missing=("$@")
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && own_policy=1
  fi
  local apt=(apt-get -o DPkg::Lock::Timeout=600) ok=0
  export DEBIAN_FRONTEND=noninteractive
  if "${apt[@]}" install -y --no-install-recommends "${missing[@]}"; then ok=1
  elif "${apt[@]}" update && "${apt[@]}" install -y --no-install-recommends "${missing[@]}"; then ok=1
  fi
  [ "$own_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
  [ "$ok" = 1 ] || { echo "$label: could not install ${missing[*]}" >&2; return 1; }
}

# apt_locked CMD…: runs CMD holding /run/lock/periscope-apt.lock, so the setups of two suites side by side
# (two clones) take turns: policy-rc.d is machine-wide (one setup must not remove it while another's
# install runs), and `apt-get update` fails at once, not waiting, when another holds the lists' lock.
# CMD and what it starts do not inherit the lock ({lock}>&-: one that lingered would hold it).
apt_locked() {
  local lock rc=0
  mkdir -p /run/lock
  exec {lock}>/run/lock/periscope-apt.lock
  if ! flock -w 1200 "$lock"; then
    echo "apt: waited 20 minutes for another setup's apt-get (/run/lock/periscope-apt.lock)" >&2
    exec {lock}>&-
    return 1
  fi
  "$@" {lock}>&- || rc=$?
  exec {lock}>&-
  return "$rc"
}
