package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// The admin API of the OAuth side, all behind the admin token, so a test
// against a running simulator (or `ordersync dev`) sets up apps, plays
// the token endpoints' worst cases and reads what they counted:
//
//	POST /admin/oauth/shopify/apps      ShopifyApp                      -> 204
//	POST /admin/oauth/amazon/apps       AmazonApp                       -> 204
//	GET  /admin/oauth/shopify/install?client_id&shop                    -> {"url"}
//	POST /admin/oauth/{surface}/faults  TokenFaults (replaces)          -> 204
//	POST /admin/oauth/{surface}/ttl     {"access":"1m","refresh":"24h"} -> 204
//	POST /admin/oauth/{surface}/expire                                  -> 204  (every access token lapses now)
//	POST /admin/oauth/{surface}/revoke  {"refresh_token"} or {"shop"[,"client_id"]} -> 204
//	POST /admin/oauth/spent             {"refresh_token"}               -> {"spent"}
//	GET  /admin/oauth/stats                                             -> OAuthStats
//
// Tokens travel in POST bodies, never in URLs (which end up in logs).

func (s *Simulator) adminOAuthRoutes(mux *http.ServeMux) {
	admin := func(h func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if !s.adminAuth(w, r) {
				return
			}
			if err := h(w, r); err != nil {
				writeError(w, http.StatusBadRequest, err.Error())
			}
		}
	}
	mux.HandleFunc("POST /admin/oauth/shopify/apps", admin(adminApply(func(_ *http.Request, app ShopifyApp) error {
		return s.RegisterShopifyApp(app)
	})))
	mux.HandleFunc("POST /admin/oauth/amazon/apps", admin(adminApply(func(_ *http.Request, app AmazonApp) error {
		return s.RegisterAmazonApp(app)
	})))
	mux.HandleFunc("GET /admin/oauth/shopify/install", admin(func(w http.ResponseWriter, r *http.Request) error {
		u, err := s.ShopifyInstallURL(r.URL.Query().Get("client_id"), r.URL.Query().Get("shop"))
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]string{"url": u})
		return nil
	}))
	mux.HandleFunc("POST /admin/oauth/{surface}/faults", admin(adminApply(func(r *http.Request, f TokenFaults) error {
		return s.SetTokenFaults(r.PathValue("surface"), f)
	})))
	mux.HandleFunc("POST /admin/oauth/{surface}/ttl", admin(adminApply(func(r *http.Request, body struct {
		Access  string `json:"access"`
		Refresh string `json:"refresh"`
	}) error {
		var ttl [2]time.Duration
		for i, v := range []string{body.Access, body.Refresh} {
			if v == "" {
				continue
			}
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("ttl %q is not a duration", clip(v))
			}
			ttl[i] = d
		}
		return s.SetTokenTTL(r.PathValue("surface"), ttl[0], ttl[1])
	})))
	mux.HandleFunc("POST /admin/oauth/{surface}/expire", admin(func(w http.ResponseWriter, r *http.Request) error {
		if err := s.ExpireAccessTokens(r.PathValue("surface")); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}))
	mux.HandleFunc("POST /admin/oauth/{surface}/revoke", admin(adminApply(func(r *http.Request, body struct {
		RefreshToken string `json:"refresh_token"`
		Shop         string `json:"shop"`
		ClientID     string `json:"client_id"`
	}) error {
		surface := r.PathValue("surface")
		switch {
		case body.RefreshToken != "":
			return s.RevokeRefreshToken(surface, body.RefreshToken)
		case body.Shop == "":
			return fmt.Errorf("revoke needs a refresh_token or a shop")
		case surface == SurfaceShopify:
			return s.RevokeShopifyInstall(body.Shop, body.ClientID)
		case surface == SurfaceAmazon:
			return s.RevokeAmazonAuthorization(body.Shop, body.ClientID)
		default:
			return checkSurface(surface)
		}
	})))
	mux.HandleFunc("POST /admin/oauth/spent", admin(func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			RefreshToken string `json:"refresh_token"`
		}
		if err := decodeAdminBody(r, &body); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]int64{"spent": s.RefreshSpent(body.RefreshToken)})
		return nil
	}))
	mux.HandleFunc("GET /admin/oauth/stats", admin(func(w http.ResponseWriter, r *http.Request) error {
		writeJSON(w, http.StatusOK, s.AuthStats())
		return nil
	}))
}

// decodeAdminBody reads an admin request's JSON body (64 KiB at most, no
// unknown fields) into v.
func decodeAdminBody(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("body: %v", err)
	}
	return nil
}

// adminApply is an admin POST that decodes its body as a T, hands it to
// apply and answers 204.
func adminApply[T any](apply func(r *http.Request, body T) error) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		var body T
		if err := decodeAdminBody(r, &body); err != nil {
			return err
		}
		if err := apply(r, body); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
}

// RegisterShopifyApp registers a Shopify app with the simulator.
func (c *AdminClient) RegisterShopifyApp(ctx context.Context, app ShopifyApp) error {
	return c.post(ctx, "/admin/oauth/shopify/apps", app, nil)
}

// RegisterAmazonApp registers an SP-API application with the simulator.
func (c *AdminClient) RegisterAmazonApp(ctx context.Context, app AmazonApp) error {
	return c.post(ctx, "/admin/oauth/amazon/apps", app, nil)
}

// ShopifyInstallURL returns the install request Shopify would send to the
// app's URL for shop.
func (c *AdminClient) ShopifyInstallURL(ctx context.Context, clientID, shop string) (string, error) {
	var out struct {
		URL string `json:"url"`
	}
	err := c.get(ctx, "/admin/oauth/shopify/install", url.Values{"client_id": {clientID}, "shop": {shop}}, &out)
	return out.URL, err
}

// SetTokenFaults replaces a surface's token endpoint faults.
func (c *AdminClient) SetTokenFaults(ctx context.Context, surface string, f TokenFaults) error {
	return c.post(ctx, "/admin/oauth/"+url.PathEscape(surface)+"/faults", f, nil)
}

// SetTokenTTL changes the lifetime of tokens issued from now on (0 keeps).
func (c *AdminClient) SetTokenTTL(ctx context.Context, surface string, access, refresh time.Duration) error {
	body := map[string]string{}
	if access > 0 {
		body["access"] = access.String()
	}
	if refresh > 0 {
		body["refresh"] = refresh.String()
	}
	return c.post(ctx, "/admin/oauth/"+url.PathEscape(surface)+"/ttl", body, nil)
}

// ExpireAccessTokens makes every access token of a surface lapse now.
func (c *AdminClient) ExpireAccessTokens(ctx context.Context, surface string) error {
	return c.post(ctx, "/admin/oauth/"+url.PathEscape(surface)+"/expire", struct{}{}, nil)
}

// RevokeRefreshToken revokes one refresh token.
func (c *AdminClient) RevokeRefreshToken(ctx context.Context, surface, token string) error {
	return c.post(ctx, "/admin/oauth/"+url.PathEscape(surface)+"/revoke", map[string]string{"refresh_token": token}, nil)
}

// RevokeShopifyInstall uninstalls an app (every app: clientID "") from a shop.
func (c *AdminClient) RevokeShopifyInstall(ctx context.Context, shop, clientID string) error {
	return c.post(ctx, "/admin/oauth/shopify/revoke", map[string]string{"shop": shop, "client_id": clientID}, nil)
}

// RevokeAmazonAuthorization removes an app's (every app's: clientID "")
// authorization by a seller.
func (c *AdminClient) RevokeAmazonAuthorization(ctx context.Context, shop, clientID string) error {
	return c.post(ctx, "/admin/oauth/amazon/revoke", map[string]string{"shop": shop, "client_id": clientID}, nil)
}

// RefreshSpent is how many refresh requests spent a refresh token.
func (c *AdminClient) RefreshSpent(ctx context.Context, token string) (int64, error) {
	var out struct {
		Spent int64 `json:"spent"`
	}
	err := c.post(ctx, "/admin/oauth/spent", map[string]string{"refresh_token": token}, &out)
	return out.Spent, err
}

// AuthStats returns both surfaces' token counters.
func (c *AdminClient) AuthStats(ctx context.Context) (*OAuthStats, error) {
	var st OAuthStats
	if err := c.get(ctx, "/admin/oauth/stats", nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}
