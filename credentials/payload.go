package credentials

import (
	"encoding/json"
	"fmt"
)

// Payload is the secret part of a stored credential, sealed as JSON with
// the keyring: never stored, logged or printed in the clear. Its String
// and GoString hide the contents, so a %v of a struct holding one does
// not leak it.
type Payload struct {
	AccessToken  string `json:"access_token,omitempty"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope,omitempty"`
	// TokenURL is where the refresh grant is posted. It is sealed with
	// the tokens, so whoever can write the store but holds no key cannot
	// point a refresh token (and the app's secret) elsewhere.
	TokenURL string `json:"token_url,omitempty"`
	// ClientID and ClientSecret are an app's (KindApp).
	ClientID         string `json:"client_id,omitempty"`
	ClientSecret     string `json:"client_secret,omitempty"`
	Shop             string `json:"shop,omitempty"`
	SellingPartnerID string `json:"selling_partner_id,omitempty"`
}

// String hides the payload.
func (Payload) String() string { return "credentials.Payload{…}" }

// GoString hides the payload from %#v.
func (p Payload) GoString() string { return p.String() }

// seal encrypts p for the credential name with the keyring's current key
// into r (KeyID and Sealed).
func (p Payload) seal(k *Keyring, r *Record) error {
	plain, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("seal stored credential %q: %w", r.Name, err)
	}
	r.KeyID, r.Sealed, err = k.Seal(r.Name, plain)
	return err
}

// openPayload decrypts r's payload.
func openPayload(k *Keyring, r Record) (Payload, error) {
	plain, err := k.Open(r.Name, r.KeyID, r.Sealed)
	if err != nil {
		return Payload{}, err
	}
	var p Payload
	if err := json.Unmarshal(plain, &p); err != nil {
		// The error of json names no value, but say only where it failed.
		return Payload{}, fmt.Errorf("stored credential %q: the opened secret is not a credential payload: %w", r.Name, ErrOpen)
	}
	return p, nil
}
