package relay

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/switchboardgg/switchboard/api"
)

// JoinCodeStatus is a live join code as GET /relay/v1/joincode/{code}
// shows it (Switchboard only).
type JoinCodeStatus struct {
	JoinCode string
	// Migrating is true while the code's host is gone and the code is held
	// for a peer to take over (host migration); false when joins are
	// served.
	Migrating bool
	// Host is the host's allocation id (while migrating, the dead
	// host's).
	Host AllocationID
	// Region is the host's relay region.
	Region string
	// ExpiresAt is when the code dies at the latest.
	ExpiresAt time.Time
	// HostMigration reports whether the host opted in to host migration.
	HostMigration bool
}

// JoinCodeStatus returns the status of a live join code (any
// authenticated caller may ask). It fails with a *session.APIError
// matching ErrJoinCodeNotFound for an unknown, revoked or dead code.
func (c *Client) JoinCodeStatus(ctx context.Context, joinCode string) (*JoinCodeStatus, error) {
	var out api.RelayResponse[api.RelayJoinCodeStatusData]
	if _, err := c.sc.Do(ctx, http.MethodGet, joinCodePath(joinCode), nil, &out); err != nil {
		return nil, fmt.Errorf("relay: join code status: %w", err)
	}
	in := out.Data.JoinCode
	host, err := parseID(in.HostAllocationID)
	if err != nil {
		return nil, fmt.Errorf("relay: join code status: answer's hostAllocationId: %w", err)
	}
	return &JoinCodeStatus{
		JoinCode: in.JoinCode, Migrating: in.Status == api.RelayJoinCodeMigrating, Host: host,
		Region: in.Region, ExpiresAt: in.ExpiresAt.Time, HostMigration: in.HostMigration,
	}, nil
}

// RevokeJoinCode revokes a join code (DELETE /relay/v1/joincode/{code}):
// new joins with it fail with ErrJoinCodeNotFound; the host's allocation
// and its connected peers live on, and [Client.CreateJoinCode] gives the
// host a new code. Only the caller that made the code may revoke it; else
// it fails with a *session.APIError matching ErrForbidden
// (ErrJoinCodeNotFound for an unknown code).
func (c *Client) RevokeJoinCode(ctx context.Context, joinCode string) error {
	if _, err := c.sc.Do(ctx, http.MethodDelete, joinCodePath(joinCode), nil, nil); err != nil {
		return fmt.Errorf("relay: revoke join code: %w", err)
	}
	return nil
}

func joinCodePath(code string) string {
	return "/relay/v1/joincode/" + url.PathEscape(strings.TrimSpace(code))
}

func parseID(s string) (AllocationID, error) {
	var id AllocationID
	err := id.UnmarshalText([]byte(s))
	return id, err
}
