#!/bin/sh
# Regenerates the test PKI in this folder (see README.md). Test-only keys: no real secrets.
set -eu
cd "$(dirname "$0")"
DAYS=36500
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Two self-signed CAs: `ca` signs everything, `other-ca` signs nothing (the unknown CA).
for ca in ca other-ca; do
  key "$ca.key"
  openssl req -x509 -new -key "$ca.key" -days "$DAYS" -subj "/CN=kafka-core test $ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$ca.pem"
done

# Server: SAN DNS:localhost and IP:127.0.0.1.
key server.key
openssl req -new -key server.key -subj "/CN=localhost" -out "$tmp/server.csr"
printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
  "extendedKeyUsage=serverAuth" "subjectAltName=DNS:localhost,IP:127.0.0.1" > "$tmp/server.ext"
openssl x509 -req -in "$tmp/server.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
  -days "$DAYS" -extfile "$tmp/server.ext" -out server.pem

# Client (mTLS).
key client.key
openssl req -new -key client.key -subj "/CN=kafka-core test client" -out "$tmp/client.csr"
printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
  "extendedKeyUsage=clientAuth" > "$tmp/client.ext"
openssl x509 -req -in "$tmp/client.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
  -days "$DAYS" -extfile "$tmp/client.ext" -out client.pem

# The client key encrypted (encrypted PKCS#8), for `ssl.key.password`.
openssl pkcs8 -topk8 -v2 aes-256-cbc -v2prf hmacWithSHA256 -passout pass:kafka-rs-test \
  -in client.key -out client-encrypted.key
openssl pkcs8 -topk8 -v2 aes-128-cbc -v2prf hmacWithSHA1 -passout pass:kafka-rs-test \
  -in client.key -out client-encrypted-sha1.key

rm -f ca.srl ca.key other-ca.key
