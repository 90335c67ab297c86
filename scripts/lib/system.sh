# Sourced by scripts/up.sh and scripts/test.sh: the Debian packages of scripts/packages.txt,
# installed with apt-get when missing, as root or with passwordless sudo.

packages_file="$(dirname "${BASH_SOURCE[0]}")/../packages.txt"

# The packages of the named groups (every group when none is named), one per line.
packages_of() {
  local want=" $* "
  sed -e 's/#.*//' "$packages_file" | while read -r group pkgs; do
    [ -n "$group" ] || continue
    if [ $# -eq 0 ] || [[ "$want" == *" $group "* ]]; then printf '%s\n' $pkgs; fi
  done
}

# Of the named groups' packages, those dpkg does not have installed.
missing_packages() {
  local pkg
  for pkg in $(packages_of "$@"); do
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null)" = installed ] || echo "$pkg"
  done
}

# Empty as root, `sudo -n` with passwordless sudo; fails otherwise.
privilege() {
  if [ "$(id -u)" -eq 0 ]; then echo ""; return 0; fi
  command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null && { echo "sudo -n"; return 0; }
  return 1
}

# Installs what the named groups miss. Prints progress on stderr. Returns 1 when something is
# missing and cannot be installed (no root, no passwordless sudo, or apt-get failed).
install_missing() {
  local missing sudo
  mapfile -t missing < <(missing_packages "$@")
  [ ${#missing[@]} -gt 0 ] || return 0
  if ! sudo=$(privilege); then
    echo "ostia: missing Debian packages: ${missing[*]} (not root and no passwordless sudo, so not installed)" >&2
    return 1
  fi
  echo "ostia: installing ${missing[*]} (apt-get)..." >&2
  {
    $sudo apt-get -o DPkg::Lock::Timeout=900 update -q &&
      $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends "${missing[@]}"
  } </dev/null >&2 || { echo "ostia: apt-get could not install ${missing[*]}" >&2; return 1; }
}
