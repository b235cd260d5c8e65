package relay

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/switchboardgg/switchboard/api"
)

// Sentinels of the host migration codes of the relay API (docs/api.md,
// Host migration). A REST call fails with a *session.APIError that
// matches them with errors.Is.
var (
	// ErrJoinCodeTaken: 15409, another peer took the join code over
	// first; join it.
	ErrJoinCodeTaken error = problem(api.RelayCodeJoinCodeTaken, "join code taken over by another peer")
	// ErrJoinCodeMigrating: 15411, the join code's host is gone and the
	// code is held for a peer to take over; join again shortly.
	ErrJoinCodeMigrating error = problem(api.RelayCodeJoinCodeMigrating, "join code migrating")
	// ErrJoinCodeNotHeld: 15412, a claim of a code whose host is alive
	// or whose end the relay has not reported yet; retry shortly.
	ErrJoinCodeNotHeld error = problem(api.RelayCodeJoinCodeNotHeld, "join code not held for migration")
)

// Defaults of host migration.
const (
	// DefaultMigrateTimeout bounds [Client.Migrate] when ctx has no
	// earlier deadline: longer than the deployment's default grace
	// period (10 s), in which the claim must land.
	DefaultMigrateTimeout = 15 * time.Second
	// DefaultMigrateReportWait is how long Migrate retries a claim that
	// the server refuses because the host's end is not recorded (the
	// relay node reports it within milliseconds of the DISCONNECT). After
	// it, the host is taken to be alive (the joiner lost its own
	// allocation) and Migrate joins the code again.
	DefaultMigrateReportWait = 2 * time.Second
	// migrateRetry is the pause between two claims or joins that the
	// server asked to retry.
	migrateRetry = 100 * time.Millisecond
)

// ClaimJoinCode takes over joinCode, held since its host died, for host
// allocation a (POST /relay/v1/joincode with joinCode and
// previousAllocationId): prev is the caller's allocation that joined with
// the code. On success a.JoinCode is joinCode. It fails with a
// *session.APIError matching ErrJoinCodeTaken (another peer was first),
// ErrJoinCodeNotHeld (retry), ErrJoinCodeNotFound (the code is dead: no
// migration, or the grace period is over), ErrForbidden or
// ErrAllocationNotFound.
func (c *Client) ClaimJoinCode(ctx context.Context, a *Allocation, joinCode string, prev AllocationID) error {
	var out api.RelayResponse[api.RelayJoinCodeData]
	req := api.RelayJoinCodeRequest{AllocationID: a.ID.String(), JoinCode: joinCode, PreviousAllocationID: prev.String()}
	if _, err := c.sc.Do(ctx, http.MethodPost, "/relay/v1/joincode", req, &out); err != nil {
		return fmt.Errorf("relay: claim join code: %w", err)
	}
	a.JoinCode = out.Data.JoinCode
	return nil
}

// Migrate continues the session of old, a joiner whose host died
// (old.Err() is ErrHostGone or a fatal ServerError), when the host had
// allocated with host migration. It races the session's other peers for
// the join code: it allocates a new host allocation (with req, in old's
// region when req names none, and with HostMigration set so that the
// session can migrate again) and claims the code with it. The winner gets
// a host [Conn] with the same join code, to which the other peers
// reconnect; a loser releases its new allocation and joins the code
// again, getting a joiner Conn connected to the winner. Either way the
// join code stays the same. When the host turns out to be alive (the
// claim is refused as not held for DefaultMigrateReportWait: old lost its
// own allocation), Migrate joins the code again too.
//
// It closes old. It fails with an error matching ErrJoinCodeNotFound when
// the code died with its host (no host migration, or nobody claimed it in
// the grace period), and with ctx's error, bounded by
// DefaultMigrateTimeout without an earlier deadline.
func (c *Client) Migrate(ctx context.Context, old *Conn, req AllocateRequest) (*Conn, error) {
	if old.IsHost() {
		return nil, errors.New("relay: migrate: a host's Conn has no host to replace")
	}
	code, prev := old.JoinCode(), old.ID()
	if code == "" {
		return nil, errors.New("relay: migrate: the Conn was not joined with a join code")
	}
	_ = old.Close()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultMigrateTimeout)
		defer cancel()
	}
	if req.Region == "" {
		req.Region = old.Region()
	}
	req.HostMigration = true
	a, err := c.Allocate(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("relay: migrate: %w", err)
	}
	giveUp := time.Now().Add(DefaultMigrateReportWait)
	for {
		err = c.ClaimJoinCode(ctx, a, code, prev)
		if err == nil {
			c.cfg.Logger.Info("relay: took the session over as its host")
			return c.Dial(ctx, a)
		}
		if !errors.Is(err, ErrJoinCodeNotHeld) || time.Now().After(giveUp) {
			break
		}
		if err := pause(ctx); err != nil {
			c.release(a)
			return nil, fmt.Errorf("relay: migrate: the host's end was never reported: %w", err)
		}
	}
	c.release(a)
	if !errors.Is(err, ErrJoinCodeTaken) && !errors.Is(err, ErrJoinCodeNotHeld) {
		return nil, fmt.Errorf("relay: migrate: %w", err)
	}
	for {
		j, err := c.JoinAllocation(ctx, code)
		if err == nil {
			return c.Dial(ctx, j)
		}
		if !errors.Is(err, ErrJoinCodeMigrating) {
			return nil, fmt.Errorf("relay: migrate: %w", err)
		}
		if err := pause(ctx); err != nil {
			return nil, fmt.Errorf("relay: migrate: %w", err)
		}
	}
}

// release frees an allocation that lost its claim: bound and closed at
// once, so that its relay node reports the release and the caller's quota
// gets the allocation back (an allocation never bound counts until it
// expires). Best effort.
func (c *Client) release(a *Allocation) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.BindTimeout)
	defer cancel()
	if conn, err := c.Dial(ctx, a); err == nil {
		_ = conn.Close()
	}
}

func pause(ctx context.Context) error {
	t := time.NewTimer(migrateRetry)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
