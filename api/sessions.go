package api

// LoginRequest is the body of C0, POST /client/v1/sessions.
type LoginRequest struct {
	Username  string `json:"username"`
	AuthToken string `json:"auth_token,omitempty"`
}

// RefreshRequest is the body of POST /client/v1/sessions/refresh.
type RefreshRequest struct {
	RefreshToken string `json:"refresh_token"`
}

// SessionResponse is the answer of login and refresh. ExpiresAt is the
// access token's expiry.
type SessionResponse struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresAt    Time   `json:"expires_at"`
	SessionID    string `json:"session_id"`
	User         User   `json:"user"`
}

// User is the player of a login session.
type User struct {
	Username string `json:"username"`
}

// AuthTokenRequest is the body of POST /server/v1/auth-tokens.
type AuthTokenRequest struct {
	Username   string `json:"username"`
	TTLSeconds *int64 `json:"ttl_seconds,omitempty"` // nil: the server's default
}

// AuthTokenResponse is the answer of an auth token request.
type AuthTokenResponse struct {
	AuthToken string `json:"auth_token"` // "sat1.…", secret
	ExpiresAt Time   `json:"expires_at"`
}

// HealthResponse is the answer of GET /healthz when healthy.
type HealthResponse struct {
	Status string `json:"status"` // "ok"
}
