// Engine hooks: EDIT THIS FILE to connect your engine to the conformance kit.
//
// adapter.mjs (do not edit it) speaks the protocol and calls the methods of `Engine` below,
// one fresh Engine per case. Each method says what the contract (`conformance docs contract`)
// expects of it. Until you fill one in it throws "not implemented: connect ...", which the
// adapter reports as an `error` for the case, so the kit runs from the first minute and tells
// you which hook to connect next.
//
// Nodes are whatever your engine uses (objects, or integer indices into a tape): the adapter
// only hands them back to you, and names them by the program's ids on the wire. When your
// engine refuses an operation the contract says must fail, throw
// `new EngineError(kind, {...fields})` with exactly the fields of that kind, nodes as your node
// objects (docs/contract.md sections 3 to 5; `conformance docs protocol` lists them).

// import { Value } from "../src/engine.js";   // your engine

// ---- config block: what your engine supports (sent in the hello reply) -------------------
export const CONFIG = {
  engine: { name: "my-engine", version: "0.1.0", language: "javascript" },
  // The ops your engine has, among add sub mul div neg pow exp log tanh relu detach;
  // also sigmoid and sqrt, the optional ops, only if your engine has them.
  ops: ["add", "sub", "mul", "div", "neg", "pow", "exp", "log", "tanh", "relu", "detach"],
  // The levels you report honestly: values gradients errors, and trace/order once passRecord works.
  levels: ["values", "gradients", "errors"],
  // "seed" if backward accepts a seed other than 1. (adapter.mjs adds "repeat": it runs repeated steps itself.)
  features: ["seed"],
};
// ---- end of config block -------------------------------------------------------------------

// A contract error (docs/contract.md sections 3 to 5): its kind and exactly its fields.
// Kinds and fields: non-finite-leaf (operation, value); non-finite-result (operation, value);
// non-finite-local-derivative (operation, slot, value); untracked-output (operation);
// non-finite-seed (seed); non-finite-contribution (consumer, slot, operand, upstream,
// local_derivative); non-finite-pass-adjoint (node, previous, contribution);
// non-finite-accumulated-gradient (node, stored, pass_adjoint). consumer, operand, node are nodes.
// Keep this class: adapter.mjs imports it.
export class EngineError extends Error {
  constructor(kind, fields) {
    super(kind);
    this.kind = kind;
    this.fields = fields;
  }
}

function notConnected(hook) {
  return new Error(`not implemented: connect ${hook} to your engine (hooks.mjs)`);
}

// Your engine behind the hooks; a fresh one per case, so no case sees another's graph.
export class Engine {
  // A tracked leaf. A non-finite value throws new EngineError("non-finite-leaf", { operation: "variable", value }).
  variable(value) {
    throw notConnected("Engine.variable");
  }

  // An untracked leaf; non-finite-leaf as for variable, with operation "constant".
  constant(value) {
    throw notConnected("Engine.constant");
  }

  // The result node of op (add sub mul div: two operands; neg exp log tanh relu sigmoid sqrt pow: one).
  // exponent is pow's constant (null for the other ops). A non-finite value throws
  // non-finite-result (operation, value); a finite value with a non-finite local derivative
  // throws non-finite-local-derivative (operation, operand slot, value of the derivative).
  apply(op, operands, exponent) {
    throw notConnected("Engine.apply");
  }

  // An untracked leaf with node's value and no edge.
  detach(node) {
    throw notConnected("Engine.detach");
  }

  // The node's forward value.
  value(node) {
    throw notConnected("Engine.value");
  }

  // Whether the node takes part in gradients (a variable, or an op with a tracked operand).
  tracked(node) {
    throw notConnected("Engine.tracked");
  }

  // Backward from output with this seed (docs/contract.md section 5). Checks in order:
  // untracked-output, non-finite-seed, then per edge non-finite-contribution and
  // non-finite-pass-adjoint, then per node non-finite-accumulated-gradient; commit only if all pass.
  backward(output, seed) {
    throw notConnected("Engine.backward");
  }

  // Set the stored gradient of every tracked node reachable from output to 0.
  zeroGrad(output) {
    throw notConnected("Engine.zeroGrad");
  }

  // The stored gradient of a tracked node.
  gradient(node) {
    throw notConnected("Engine.gradient");
  }

  // Optional, for the trace and order levels: what the last successful backward did.
  // Return { seed, nodes: [{ node, pass_adjoint, stored_gradient }] in topology order,
  // edges: [{ consumer, slot, operand, local_derivative, upstream, contribution, before, after }]
  // in processing order }. The adapter adds each node's operation, value and tracked flag.
  // Add "trace"/"order" to CONFIG.levels when it works.
  passRecord() {
    throw notConnected("Engine.passRecord");
  }
}
