#!/usr/bin/env bash
# Makes a development CA and a webhook serving certificate signed by it (see README.md).
# Idempotent: an existing CA that is still valid is kept (so a caBundle already installed stays
# right), and the serving certificate is only re-issued when it is missing, expiring, not from
# this CA, or for other names. --force starts over with a new CA.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

service="${MKA_SERVICE:-multikueue-adapter-webhook}"
namespace="${MKA_NAMESPACE:-multikueue-adapter-system}"
out="${MKA_CERT_DIR:-${script_dir}/out}"
days="${MKA_CERT_DAYS:-365}"
ca_days="${MKA_CA_DAYS:-3650}"
renew_days=30 # re-issue what expires within this many days
force=0
extra_sans=()

usage() {
  cat <<EOF
Usage: $(basename "$0") [options]

Writes ca.crt, ca.key, tls.crt and tls.key to the output directory. The serving certificate is
valid for localhost, 127.0.0.1, <service>.<namespace>.svc and <service>.<namespace>.svc.cluster.local.

Options (environment variable in brackets):
  --service NAME     Service name                       [MKA_SERVICE]   (default: ${service})
  --namespace NAME   Namespace of the Service           [MKA_NAMESPACE] (default: ${namespace})
  --out DIR          Output directory                   [MKA_CERT_DIR]  (default: certs/out)
  --days N           Serving certificate lifetime       [MKA_CERT_DAYS] (default: ${days})
  --ca-days N        CA lifetime, when one is made      [MKA_CA_DAYS]   (default: ${ca_days})
  --san SAN          Extra name, e.g. DNS:webhook.local or IP:10.0.0.5 (repeatable)
  --force            Make a new CA and serving certificate even if the current ones are fine
  -h, --help         This help
EOF
}

die() {
  echo "gen-dev-certs: $*" >&2
  exit 1
}

need_value() { [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a value (see --help)"; }

while [[ $# -gt 0 ]]; do
  case "$1" in
  --service) need_value "$@"; service="$2"; shift 2 ;;
  --namespace) need_value "$@"; namespace="$2"; shift 2 ;;
  --out) need_value "$@"; out="$2"; shift 2 ;;
  --days) need_value "$@"; days="$2"; shift 2 ;;
  --ca-days) need_value "$@"; ca_days="$2"; shift 2 ;;
  --san) need_value "$@"; extra_sans+=("$2"); shift 2 ;;
  --force) force=1; shift ;;
  -h | --help) usage; exit 0 ;;
  *) die "unknown argument '$1' (see --help)" ;;
  esac
done

command -v openssl >/dev/null || die "openssl is not installed (Debian/Ubuntu: apt-get install openssl)"
[[ "$days" =~ ^[1-9][0-9]*$ ]] || die "--days must be a positive number of days, got '$days'"
[[ "$ca_days" =~ ^[1-9][0-9]*$ ]] || die "--ca-days must be a positive number of days, got '$ca_days'"
# DNS-1123 labels: what Kubernetes accepts for Service and Namespace names.
dns_label='^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'
[[ "$service" =~ $dns_label ]] || die "--service '$service' is not a valid Service name (lower case, digits, '-')"
[[ "$namespace" =~ $dns_label ]] || die "--namespace '$namespace' is not a valid namespace name"
for san in "${extra_sans[@]}"; do
  [[ "$san" =~ ^(DNS|IP): ]] || die "--san '$san' must start with DNS: or IP:"
done

sans=("DNS:localhost" "IP:127.0.0.1" "DNS:${service}.${namespace}.svc" "DNS:${service}.${namespace}.svc.cluster.local" "${extra_sans[@]}")
san_list="$(IFS=,; echo "${sans[*]}")"

umask 077 # keys are readable by their owner only
mkdir -p "$out"
work="$(mktemp -d "${out}/.tmp.XXXXXX")"
trap 'rm -rf "$work"' EXIT

renew_seconds=$((renew_days * 86400))

# Valid for at least renew_days more days, and the key belongs to the certificate.
usable_pair() {
  local cert="$1" key="$2"
  [[ -s "$cert" && -s "$key" ]] || return 1
  openssl x509 -in "$cert" -noout -checkend "$renew_seconds" >/dev/null 2>&1 || return 1
  [[ "$(openssl x509 -in "$cert" -noout -pubkey 2>/dev/null)" == "$(openssl pkey -in "$key" -pubout 2>/dev/null)" ]]
}

# The certificate's SANs, normalised to "DNS:x,IP:y" in sorted order.
sans_of() {
  openssl x509 -in "$1" -noout -ext subjectAltName 2>/dev/null | tail -n +2 |
    tr ',' '\n' | sed -e 's/^ *//' -e 's/^IP Address:/IP:/' | grep -v '^$' | sort | paste -sd, -
}

wanted_sans="$(printf '%s\n' "${sans[@]}" | sort | paste -sd, -)"

ca_changed=0
if [[ $force -eq 0 ]] && usable_pair "$out/ca.crt" "$out/ca.key"; then
  echo "keeping the CA in $out/ca.crt (valid until $(openssl x509 -in "$out/ca.crt" -noout -enddate | cut -d= -f2))"
else
  echo "making a new CA (valid ${ca_days} days)"
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -sha256 \
    -keyout "$work/ca.key" -out "$work/ca.crt" -days "$ca_days" \
    -subj "/CN=multikueue-adapter development CA" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -addext "subjectKeyIdentifier=hash" 2>/dev/null
  mv "$work/ca.key" "$out/ca.key"
  mv "$work/ca.crt" "$out/ca.crt"
  ca_changed=1
fi

leaf_ok=0
if [[ $force -eq 0 && $ca_changed -eq 0 ]] && usable_pair "$out/tls.crt" "$out/tls.key" &&
  openssl verify -CAfile "$out/ca.crt" "$out/tls.crt" >/dev/null 2>&1 &&
  [[ "$(sans_of "$out/tls.crt")" == "$wanted_sans" ]]; then
  leaf_ok=1
fi

if [[ $leaf_ok -eq 1 ]]; then
  echo "keeping the serving certificate in $out/tls.crt"
else
  echo "issuing a serving certificate for ${san_list} (valid ${days} days)"
  cat >"$work/leaf.ext" <<EOF
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = ${san_list}
EOF
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -sha256 \
    -keyout "$work/tls.key" -out "$work/tls.csr" -subj "/CN=${service}.${namespace}.svc" 2>/dev/null
  openssl x509 -req -in "$work/tls.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days "$days" -sha256 \
    -extfile "$work/leaf.ext" -out "$work/tls.crt" 2>/dev/null
  # Each file is replaced by a rename, so a watcher never reads half a file.
  mv "$work/tls.key" "$out/tls.key"
  mv "$work/tls.crt" "$out/tls.crt"
fi
chmod 600 "$out/ca.key" "$out/tls.key"
chmod 644 "$out/ca.crt" "$out/tls.crt"

openssl verify -CAfile "$out/ca.crt" "$out/tls.crt" >/dev/null || die "the serving certificate does not verify against ca.crt"

cat <<EOF

  ca.crt   $out/ca.crt   (the caBundle; safe to share)
  ca.key   $out/ca.key   (signs serving certificates; keep private)
  tls.crt  $out/tls.crt  (valid until $(openssl x509 -in "$out/tls.crt" -noout -enddate | cut -d= -f2))
  tls.key  $out/tls.key

Install in a cluster (see certs/README.md):
  kubectl -n ${namespace} create secret tls multikueue-adapter-webhook-cert \\
    --cert=$out/tls.crt --key=$out/tls.key --dry-run=client -o yaml | kubectl apply -f -
  caBundle: \$(base64 -w0 < $out/ca.crt)
EOF
