// Engine hooks: EDIT THIS FILE to connect your engine to the conformance kit.
//
// adapter.cpp (do not edit it) speaks the protocol and calls the methods of `hooks::Engine`
// below, on a fresh Engine per case. Each method says what the contract (`conformance docs
// contract`) expects of it. Until you fill one in it throws `conformance::not_connected(...)`,
// which the adapter reports as an error for the case, so the kit runs from the first minute and
// tells you which hook to connect next. Include your engine's headers below and add its sources
// or library to the Makefile.
//
// When your engine refuses an operation the contract says must fail, throw
// `conformance::EngineError(kind)` with exactly the fields of that kind (docs/contract.md
// sections 3 to 5; kit.hpp lists them), e.g.
//   throw conformance::EngineError("non-finite-leaf").text("operation", "variable").number("value", v);
// Any other exception (a std::exception, e.g. for an op your engine lacks) becomes an error
// reply for that case with its what(), and the loop goes on with the next case. Print only to
// stderr if you can; the loop sends what reaches stdout there anyway.
//
// Compile without -ffast-math: it compiles std::isfinite away and flushes subnormals to zero.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

// #include "my_engine.hpp"

namespace hooks {

/// Your engine's node handle: an index into a tape, a pointer, or a std::shared_ptr (a
/// million-deep chain of shared_ptr overflows the stack when it is freed unless its destructor
/// is iterative: `conformance docs starting`). The loop only copies it and hands it back.
using Handle = std::size_t;

/// A number that is the same for two handles of one node and different for different nodes:
/// the index itself, or `reinterpret_cast<std::size_t>(ptr.get())` for a pointer.
inline std::size_t node_key(const Handle& node) { return node; }

}  // namespace hooks

#include "kit.hpp"  // the kit's types: after hooks::Handle, which they use

namespace hooks {

// ---- config block: what your engine supports (sent in the hello reply) -------------------
inline const char* const ENGINE_NAME = "my-engine";
inline const char* const ENGINE_VERSION = "0.1.0";
/// The ops your engine has, among add sub mul div neg pow exp log tanh relu detach;
/// also sigmoid and sqrt, the optional ops, only if your engine has them.
inline const std::vector<std::string> OPS = {"add", "sub", "mul", "div", "neg", "pow",
                                             "exp", "log", "tanh", "relu", "detach"};
/// The levels you report honestly: values gradients errors, and trace/order once pass_record works.
inline const std::vector<std::string> LEVELS = {"values", "gradients", "errors"};
/// "seed" if backward accepts a seed other than 1. (adapter.cpp adds "repeat": it runs
/// repeated steps itself.)
inline const std::vector<std::string> FEATURES = {"seed"};
// ---- end of config block -------------------------------------------------------------------

/// Your engine behind the hooks; a fresh one per case, so no case sees another's graph.
class Engine {
public:
    /// A tracked leaf. A non-finite value throws
    /// EngineError("non-finite-leaf").text("operation", "variable").number("value", value).
    Handle variable(double value) { throw conformance::not_connected("Engine::variable"); }

    /// An untracked leaf; non-finite-leaf as for variable, with operation "constant".
    Handle constant(double value) { throw conformance::not_connected("Engine::constant"); }

    /// The result node of op (add sub mul div: two operands; neg exp log tanh relu sigmoid sqrt pow: one),
    /// operands in slot order; exponent is pow's constant (0 for the other ops). A non-finite
    /// value throws non-finite-result (operation, value); a finite value with a non-finite
    /// local derivative throws non-finite-local-derivative (operation, slot, value of the
    /// derivative).
    Handle apply(const std::string& op, const std::vector<Handle>& operands, double exponent) {
        throw conformance::not_connected("Engine::apply");
    }

    /// An untracked leaf with node's value and no edge.
    Handle detach(const Handle& node) { throw conformance::not_connected("Engine::detach"); }

    /// The node's forward value.
    double value(const Handle& node) { throw conformance::not_connected("Engine::value"); }

    /// Whether the node takes part in gradients (a variable, or an op with a tracked operand).
    bool tracked(const Handle& node) { throw conformance::not_connected("Engine::tracked"); }

    /// Backward from output with this seed (docs/contract.md section 5). Checks in order:
    /// untracked-output, non-finite-seed, then per edge non-finite-contribution and
    /// non-finite-pass-adjoint, then per node non-finite-accumulated-gradient; commit only if
    /// all pass. It must not recurse: a case is a chain a million nodes deep.
    void backward(const Handle& output, double seed) { throw conformance::not_connected("Engine::backward"); }

    /// Sets the stored gradient of every tracked node reachable from output to 0.
    void zero_grad(const Handle& output) { throw conformance::not_connected("Engine::zero_grad"); }

    /// The stored gradient of a tracked node.
    double gradient(const Handle& node) { throw conformance::not_connected("Engine::gradient"); }

    /// Optional, for the trace and order levels: what the last successful backward did (see
    /// conformance::PassRecord in kit.hpp). Add "trace"/"order" to LEVELS when it works.
    conformance::PassRecord pass_record() { throw conformance::not_connected("Engine::pass_record"); }
};

}  // namespace hooks
