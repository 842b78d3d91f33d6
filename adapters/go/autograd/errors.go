package autograd

import "fmt"

// The contract's error kinds (docs/contract.md), the same kebab-case strings the
// Python reference, the Rust port and the wire protocol use.
const (
	KindNonFiniteLeaf                = "non-finite-leaf"
	KindNonFiniteResult              = "non-finite-result"
	KindNonFiniteLocalDerivative     = "non-finite-local-derivative"
	KindUntrackedOutput              = "untracked-output"
	KindNonFiniteSeed                = "non-finite-seed"
	KindNonFiniteContribution        = "non-finite-contribution"
	KindNonFinitePassAdjoint         = "non-finite-pass-adjoint"
	KindNonFiniteAccumulatedGradient = "non-finite-accumulated-gradient"
)

// Error is implemented by every typed error of the engine. Returning one never
// changes engine state: a creation error creates no node, and a backward error
// is returned before any stored gradient is committed. Use errors.As with the
// concrete types below to read an error's fields.
type Error interface {
	error
	// Kind returns the contract's kebab-case name of the error.
	Kind() string
}

// NonFiniteLeafError reports a variable or constant given inf or nan.
type NonFiniteLeafError struct {
	Operation string // "variable" or "constant"
	Value     float64
}

// NonFiniteResultError reports an operation whose value is inf or nan
// (exp overflow, log(0), x/0, ...). No node was created.
type NonFiniteResultError struct {
	Operation string
	Value     float64
}

// NonFiniteLocalDerivativeError reports an operation whose value is finite but
// whose local derivative in operand slot Slot is not (log of a subnormal). No
// node was created.
type NonFiniteLocalDerivativeError struct {
	Operation string
	Slot      int
	Value     float64 // the derivative
}

// UntrackedOutputError reports a backward from a node that takes no part in
// gradients. It is checked before anything else.
type UntrackedOutputError struct {
	Operation string // the output node's operation
}

// NonFiniteSeedError reports a backward given an infinite or nan seed.
type NonFiniteSeedError struct {
	Seed float64
}

// NonFiniteContributionError reports upstream * local derivative overflowing
// on the operand edge (Consumer, Slot) -> Operand: Consumer's operation reads
// Operand in slot Slot, and Upstream is Consumer's pass adjoint. The fields
// are in the wire's order.
type NonFiniteContributionError struct {
	Consumer        Node
	Slot            int
	Operand         Node
	Upstream        float64
	LocalDerivative float64
}

// NonFinitePassAdjointError reports that adding a contribution to Node's pass
// adjoint overflowed.
type NonFinitePassAdjointError struct {
	Node         Node
	Previous     float64
	Contribution float64
}

// NonFiniteAccumulatedGradientError reports that adding a pass adjoint to
// Node's stored gradient would overflow; nothing was committed.
type NonFiniteAccumulatedGradientError struct {
	Node        Node
	Stored      float64
	PassAdjoint float64
}

// Kind returns "non-finite-leaf".
func (e *NonFiniteLeafError) Kind() string { return KindNonFiniteLeaf }

// Kind returns "non-finite-result".
func (e *NonFiniteResultError) Kind() string { return KindNonFiniteResult }

// Kind returns "non-finite-local-derivative".
func (e *NonFiniteLocalDerivativeError) Kind() string { return KindNonFiniteLocalDerivative }

// Kind returns "untracked-output".
func (e *UntrackedOutputError) Kind() string { return KindUntrackedOutput }

// Kind returns "non-finite-seed".
func (e *NonFiniteSeedError) Kind() string { return KindNonFiniteSeed }

// Kind returns "non-finite-contribution".
func (e *NonFiniteContributionError) Kind() string { return KindNonFiniteContribution }

// Kind returns "non-finite-pass-adjoint".
func (e *NonFinitePassAdjointError) Kind() string { return KindNonFinitePassAdjoint }

// Kind returns "non-finite-accumulated-gradient".
func (e *NonFiniteAccumulatedGradientError) Kind() string { return KindNonFiniteAccumulatedGradient }

// Error returns the kind, the operation and the value.
func (e *NonFiniteLeafError) Error() string {
	return fmt.Sprintf("%s: %s(%v)", e.Kind(), e.Operation, e.Value)
}

// Error returns the kind, the operation and the value it gave.
func (e *NonFiniteResultError) Error() string {
	return fmt.Sprintf("%s: %s gave %v", e.Kind(), e.Operation, e.Value)
}

// Error returns the kind, the operation, the slot and the derivative.
func (e *NonFiniteLocalDerivativeError) Error() string {
	return fmt.Sprintf("%s: %s slot %d has local derivative %v", e.Kind(), e.Operation, e.Slot, e.Value)
}

// Error returns the kind and the output's operation.
func (e *UntrackedOutputError) Error() string {
	return fmt.Sprintf("%s: backward from an untracked %s node", e.Kind(), e.Operation)
}

// Error returns the kind and the seed.
func (e *NonFiniteSeedError) Error() string {
	return fmt.Sprintf("%s: seed %v", e.Kind(), e.Seed)
}

// Error returns the kind, the edge (consumer, slot, operand) and the two factors.
func (e *NonFiniteContributionError) Error() string {
	return fmt.Sprintf("%s: %v slot %d reads %v: upstream %v * local derivative %v",
		e.Kind(), e.Consumer, e.Slot, e.Operand, e.Upstream, e.LocalDerivative)
}

// Error returns the kind, the node and the two terms of the sum.
func (e *NonFinitePassAdjointError) Error() string {
	return fmt.Sprintf("%s: %v: previous %v + contribution %v", e.Kind(), e.Node, e.Previous, e.Contribution)
}

// Error returns the kind, the node and the two terms of the sum.
func (e *NonFiniteAccumulatedGradientError) Error() string {
	return fmt.Sprintf("%s: %v: stored %v + pass adjoint %v", e.Kind(), e.Node, e.Stored, e.PassAdjoint)
}
