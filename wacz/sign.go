package wacz

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wayside-archive/wayside/internal/fsutil"
)

// SignedData is the signedData block of datapackage-digest.json (WACZ
// Signing and Verification 0.1.0). Wayside writes the anonymous form;
// Verify also reads the domain form's signature (not its certificate
// chain or timestamp).
type SignedData struct {
	Hash      string `json:"hash"`
	Created   string `json:"created,omitempty"`
	Software  string `json:"software,omitempty"`
	Signature string `json:"signature"`
	PublicKey string `json:"publicKey,omitempty"`
	// Domain form.
	Domain        string `json:"domain,omitempty"`
	DomainCert    string `json:"domainCert,omitempty"`
	TimeSignature string `json:"timeSignature,omitempty"`
	TimestampCert string `json:"timestampCert,omitempty"`
}

// KeyFileName is the name of the signing key LoadOrCreateKey keeps.
const KeyFileName = "wacz-signing-key.pem"

// DefaultKeyPath is where Wayside keeps its anonymous signing key: under
// the user's configuration directory (os.UserConfigDir), wayside/.
func DefaultKeyPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("wacz: no configuration directory for the signing key: %w", err)
	}
	return filepath.Join(dir, "wayside", KeyFileName), nil
}

// LoadOrCreateKey reads the ECDSA private key (PKCS #8 PEM) at path, or
// when there is no file there generates a P-384 key and writes it (mode
// 0600, its directory created 0700). created reports a new key.
func LoadOrCreateKey(path string) (key *ecdsa.PrivateKey, created bool, err error) {
	b, err := os.ReadFile(path)
	if err == nil {
		key, err := ParseKey(b)
		if err != nil {
			return nil, false, fmt.Errorf("wacz: signing key %s: %w", path, err)
		}
		return key, false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, false, fmt.Errorf("wacz: signing key: %w", err)
	}
	key, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		return nil, false, fmt.Errorf("wacz: generate signing key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, false, fmt.Errorf("wacz: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, fmt.Errorf("wacz: signing key: %w", err)
	}
	err = fsutil.WriteFileAtomic(path, 0o600, func(w io.Writer) error {
		return pem.Encode(w, &pem.Block{Type: "PRIVATE KEY", Bytes: der})
	})
	if err != nil {
		return nil, false, fmt.Errorf("wacz: signing key: %w", err)
	}
	return key, true, nil
}

// ParseKey parses an ECDSA private key in PEM (PKCS #8 or SEC 1).
func ParseKey(b []byte) (*ecdsa.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("not a PEM file")
	}
	if k, err := x509.ParsePKCS8PrivateKey(blk.Bytes); err == nil {
		ek, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("a %T, not an ECDSA key", k)
		}
		return ek, nil
	}
	return x509.ParseECPrivateKey(blk.Bytes)
}

// PublicKey returns the base64 DER (SubjectPublicKeyInfo) public key as the
// signature block carries it.
func PublicKey(key *ecdsa.PrivateKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", fmt.Errorf("wacz: %w", err)
	}
	return base64.StdEncoding.EncodeToString(der), nil
}

// Sign signs hash (the "sha256:…" text of datapackage.json's digest) with
// key: ECDSA with SHA-256 over the text, r||s (as WebCrypto gives and
// checks it), base64.
func Sign(key *ecdsa.PrivateKey, hash string, created time.Time, software string) (*SignedData, error) {
	pub, err := PublicKey(key)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(hash))
	r, s, err := ecdsa.Sign(rand.Reader, key, sum[:])
	if err != nil {
		return nil, fmt.Errorf("wacz: sign: %w", err)
	}
	n := (key.Curve.Params().BitSize + 7) / 8
	sig := make([]byte, 2*n)
	r.FillBytes(sig[:n])
	s.FillBytes(sig[n:])
	return &SignedData{
		Hash:      hash,
		Created:   created.UTC().Format(time.RFC3339),
		Software:  software,
		Signature: base64.StdEncoding.EncodeToString(sig),
		PublicKey: pub,
	}, nil
}

// VerifySignature checks sd's signature of sd.Hash: with its publicKey
// (anonymous form) or the public key of the first certificate of its
// domainCert (domain form; the chain and timestamp are not checked). It
// returns the public key used (base64 DER).
func VerifySignature(sd *SignedData) (string, error) {
	var pub *ecdsa.PublicKey
	var pubText string
	switch {
	case sd.PublicKey != "":
		der, err := base64.StdEncoding.DecodeString(sd.PublicKey)
		if err != nil {
			return "", fmt.Errorf("publicKey is not base64: %w", err)
		}
		k, err := x509.ParsePKIXPublicKey(der)
		if err != nil {
			return "", fmt.Errorf("publicKey: %w", err)
		}
		ek, ok := k.(*ecdsa.PublicKey)
		if !ok {
			return "", fmt.Errorf("publicKey is a %T, not an ECDSA key", k)
		}
		pub, pubText = ek, sd.PublicKey
	case sd.DomainCert != "":
		blk, _ := pem.Decode([]byte(sd.DomainCert))
		if blk == nil {
			return "", errors.New("domainCert holds no PEM certificate")
		}
		cert, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return "", fmt.Errorf("domainCert: %w", err)
		}
		ek, ok := cert.PublicKey.(*ecdsa.PublicKey)
		if !ok {
			return "", fmt.Errorf("domainCert's key is a %T, not an ECDSA key", cert.PublicKey)
		}
		pub = ek
		der, _ := x509.MarshalPKIXPublicKey(ek)
		pubText = base64.StdEncoding.EncodeToString(der)
	default:
		return "", errors.New("signedData has neither publicKey nor domainCert")
	}
	sig, err := base64.StdEncoding.DecodeString(sd.Signature)
	if err != nil {
		return "", fmt.Errorf("signature is not base64: %w", err)
	}
	sum := sha256.Sum256([]byte(sd.Hash))
	n := (pub.Curve.Params().BitSize + 7) / 8
	ok := false
	if len(sig) == 2*n {
		r := new(big.Int).SetBytes(sig[:n])
		s := new(big.Int).SetBytes(sig[n:])
		ok = ecdsa.Verify(pub, sum[:], r, s)
	} else {
		ok = ecdsa.VerifyASN1(pub, sum[:], sig)
	}
	if !ok {
		return pubText, errors.New("the signature does not match the hash and public key")
	}
	return pubText, nil
}

// samePublicKey compares base64 DER public keys, ignoring white space.
func samePublicKey(a, b string) bool {
	clean := func(s string) string { return strings.Join(strings.Fields(s), "") }
	return clean(a) == clean(b)
}
