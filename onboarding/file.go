package onboarding

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"
)

// fileConfig is the onboarding file (ORDERSYNC_OAUTH_FILE, serve
// --oauth-file): what the operator set up in Shopify's and Amazon's
// developer consoles, and the settings of the accounts the flows add.
type fileConfig struct {
	PublicURL    string `yaml:"public_url"`
	ReuseRemoved bool   `yaml:"reuse_removed"`
	Shopify      *struct {
		App        string         `yaml:"app"`
		Scopes     []string       `yaml:"scopes"`
		ShopURL    string         `yaml:"shop_url"`
		NamePrefix string         `yaml:"name_prefix"`
		Settings   map[string]any `yaml:"settings"`
	} `yaml:"shopify"`
	Amazon *struct {
		App           string         `yaml:"app"`
		ApplicationID string         `yaml:"application_id"`
		ConsentURL    string         `yaml:"consent_url"`
		TokenURL      string         `yaml:"token_url"`
		Draft         bool           `yaml:"draft"`
		NamePrefix    string         `yaml:"name_prefix"`
		Settings      map[string]any `yaml:"settings"`
	} `yaml:"amazon"`
}

// maxFile bounds the onboarding file: a few dozen lines.
const maxFile = 64 << 10

// LoadFile reads the onboarding file; unknown fields are refused by name.
// The file holds no secret: apps are stored credentials, named here.
func LoadFile(path string) (Config, error) {
	fh, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("onboarding file: %w", err)
	}
	defer fh.Close()
	b, err := readBounded(fh, maxFile)
	if err != nil {
		return Config{}, fmt.Errorf("onboarding file %s: %w", path, err)
	}
	return ParseFile(path, b)
}

// ParseFile parses an onboarding file's bytes; source names it in errors.
func ParseFile(source string, b []byte) (Config, error) {
	var f fileConfig
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("onboarding file %s: %w", source, err)
	}
	cfg := Config{PublicURL: f.PublicURL, ReuseRemoved: f.ReuseRemoved}
	if s := f.Shopify; s != nil {
		cfg.Shopify = &ShopifyConfig{App: s.App, Scopes: s.Scopes, ShopURL: s.ShopURL, NamePrefix: s.NamePrefix, Settings: s.Settings}
	}
	if a := f.Amazon; a != nil {
		cfg.Amazon = &AmazonConfig{App: a.App, ApplicationID: a.ApplicationID, ConsentURL: a.ConsentURL, TokenURL: a.TokenURL,
			Draft: a.Draft, NamePrefix: a.NamePrefix, Settings: a.Settings}
	}
	for _, s := range []map[string]any{settingsOf(cfg.Shopify), settingsOf(cfg.Amazon)} {
		for _, k := range []string{"kind", "credentials"} {
			if _, ok := s[k]; ok {
				return Config{}, fmt.Errorf("onboarding file %s: settings.%s is the flow's to set, not the file's", source, k)
			}
		}
	}
	return cfg, nil
}

func settingsOf(c any) map[string]any {
	switch c := c.(type) {
	case *ShopifyConfig:
		if c != nil {
			return c.Settings
		}
	case *AmazonConfig:
		if c != nil {
			return c.Settings
		}
	}
	return nil
}
