package api

// Switchboard's additions to the relay API (issue 9 items 4–5): join code
// status and revocation, host migration. docs/api.md describes them.

// Relay error codes of the additions ([RelayProblem].Code).
const (
	// RelayCodeJoinCodeTaken (409): a claim lost: another peer took the
	// code over first. Join it instead.
	RelayCodeJoinCodeTaken = 15409
	// RelayCodeJoinCodeMigrating (409): a join of a code whose host is
	// gone and that is held for a peer to take over. Retry shortly.
	RelayCodeJoinCodeMigrating = 15411
	// RelayCodeJoinCodeNotHeld (409): a claim of a code whose host is
	// alive, or whose death the relay has not reported yet. Retry
	// shortly, or join.
	RelayCodeJoinCodeNotHeld = 15412
)

// Join code states ([RelayJoinCodeStatus].Status).
const (
	RelayJoinCodeActive    = "active"    // its host is alive: joins are served
	RelayJoinCodeMigrating = "migrating" // its host is gone; held for a claim until heldUntil
)

// RelayJoinCodeStatus is the data of GET /relay/v1/joincode/{code}.
type RelayJoinCodeStatus struct {
	JoinCode string `json:"joinCode"`
	// Status is RelayJoinCodeActive or RelayJoinCodeMigrating.
	Status string `json:"status"`
	// HostAllocationID is the host's allocation (UUID); while migrating,
	// the dead host's.
	HostAllocationID string `json:"hostAllocationId"`
	Region           string `json:"region"`
	// ExpiresAt is when the code dies at the latest: the host's
	// allocation's expiry, or while migrating the end of the grace period.
	ExpiresAt Time `json:"expiresAt"`
	// HostMigration reports whether the host opted in to host migration.
	HostMigration bool `json:"hostMigration"`
}

// RelayJoinCodeStatusData is the data of GET /relay/v1/joincode/{code}.
type RelayJoinCodeStatusData struct {
	JoinCode RelayJoinCodeStatus `json:"joinCode"`
}
