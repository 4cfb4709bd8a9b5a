package history

// The fault-points nemesis (issue 29; DESIGN.md section 3): a step arms a
// named fault point of gregor's own brokers (cluster/faultpoint) on its
// target nodes for its hold (to the end of the fault phase by default);
// each firing is an operation of its own.
const (
	// NemesisFaultPoints arms a drawn fault point with a drawn action; it
	// ends with end-fault-points (the point disarmed).
	NemesisFaultPoints = "fault-points"
	// VerbFaultPointFired is a firing, as the broker recorded it: the point,
	// the node, the action, what it fired for (key, group, txn).
	VerbFaultPointFired = "fault-point-fired"
	// VerbFaultPointRestart is the harness restarting a node a crash at a
	// point took down, the firing's duration after it died.
	VerbFaultPointRestart = "fault-point-restart"
)

// FaultPointValue are the fields of a fault-points step's operations (in
// NemesisValue): the armed point, its action, the probability a hit fires,
// the most firings, and the action's duration (a pause, cut or hold; a
// crash's downtime); for a firing, what it fired for and the broker's time
// of it; at the step's end, how many fired. A history written before
// fault points decodes with them zero.
type FaultPointValue struct {
	Point       string  `json:"point,omitempty"`
	Action      string  `json:"action,omitempty"`
	Probability float64 `json:"probability,omitempty"`
	Max         int     `json:"max,omitempty"`
	For         string  `json:"for,omitempty"`
	// After is how long after the hit the action ran ("": at once).
	After string `json:"after,omitempty"`
	// Aim is which node acts: "" the node that reached the point, "about"
	// the node its step is about (cluster/faultpoint.AimAbout).
	Aim string `json:"aim,omitempty"`
	// HitBy is, for a firing aimed at another node, the node that reached
	// the point (the firing's node is the one that acted).
	HitBy int32 `json:"hit_by,omitempty"`
	// Key is the topic partition ("topic/p") a firing was about; Group the
	// consumer group; Txn the transactional id; Broker the broker a
	// controller step was about (a registration).
	Key         string `json:"key,omitempty"`
	Group       string `json:"group,omitempty"`
	Txn         string `json:"txn,omitempty"`
	AboutBroker int32  `json:"about_broker,omitempty"`
	// FiredAt is the broker's clock at the firing, nanoseconds since the
	// test started (the operation's time is when the harness read it).
	FiredAt *int64 `json:"fired_at,omitempty"`
	// Fired counts the step's firings, at its end.
	Fired *int `json:"fired,omitempty"`
}
