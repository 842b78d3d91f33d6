// A tiny correct engine written into the JavaScript starter's hooks, for tests/test_starters.py.
// It follows the contract (docs/contract.md sections 3 to 6) with Math: every operand edge
// summed, fresh pass adjoints per backward, every check before the commit, the canonical
// depth-first post-order, and a pass record for trace and order.

export const CONFIG = {
  engine: { name: "starter-test-engine", version: "0.1.0", language: "javascript" },
  ops: ["add", "sub", "mul", "div", "neg", "pow", "exp", "log", "tanh", "relu", "sigmoid", "sqrt", "detach"],
  levels: ["values", "gradients", "errors", "trace", "order"],
  features: ["seed"],
};

export class EngineError extends Error {
  constructor(kind, fields) {
    super(kind);
    this.kind = kind;
    this.fields = fields;
  }
}

// The op table: value and local derivatives from the forward values, as the contract writes them.
// JavaScript's / and Math.pow already give the IEEE results (inf, nan) instead of throwing.
const RULES = {
  add: (a, b) => [a + b, [1, 1]],
  sub: (a, b) => [a - b, [1, -1]],
  mul: (a, b) => [a * b, [b, a]],
  div: (a, b) => { const r = a / b; return [r, [1 / b, -(r / b)]]; },
  neg: (a) => [-a, [-1]],
  exp: (a) => { const r = Math.exp(a); return [r, [r]]; },
  log: (a) => [Math.log(a), [1 / a]],
  tanh: (a) => { const t = Math.tanh(a); return [t, [1 - t * t]]; },
  relu: (a) => (a > 0 ? [a, [1]] : [0, [0]]),
  // The stable form: exp never overflows, and s is subnormal or +0.0 far below zero.
  sigmoid: (a) => {
    const s = a >= 0 ? 1 / (1 + Math.exp(-a)) : Math.exp(a) / (1 + Math.exp(a));
    return [s, [s * (1 - s)]];
  },
  sqrt: (a) => { const r = Math.sqrt(a); return [r, [0.5 / r]]; },
};

class Node {
  constructor(value, operation, operands, derivatives, tracked) {
    Object.assign(this, { value, operation, operands, derivatives, tracked, grad: 0 });
  }
}

function topology(output) {
  // Depth-first post-order from the output, operands in slot order, iteratively.
  const order = [];
  const seen = new Set([output]);
  const stack = [[output, 0]];
  while (stack.length) {
    const top = stack[stack.length - 1];
    const [node, slot] = top;
    if (slot < node.operands.length) {
      top[1] += 1;
      const operand = node.operands[slot];
      if (!seen.has(operand)) { seen.add(operand); stack.push([operand, 0]); }
    } else {
      stack.pop();
      order.push(node);
    }
  }
  return order;
}

export class Engine {
  leaf(value, operation) {
    if (!Number.isFinite(value)) throw new EngineError("non-finite-leaf", { operation, value });
    return new Node(value, operation, [], [], operation === "variable");
  }
  variable(value) {
    if (value === 12345) {
      // Stray prints, as an engine's debug lines: the loop must keep them off the protocol.
      console.log("engine noise on stdout");
      process.stdout.write("engine noise written to process.stdout\n");
    }
    return this.leaf(value, "variable");
  }
  constant(value) { return this.leaf(value, "constant"); }
  apply(op, operands, exponent) {
    const values = operands.map((n) => n.value);
    let value, derivatives;
    if (op === "pow") {
      const a = values[0];
      value = Math.pow(a, exponent);
      derivatives = [exponent === 0 ? 0 : exponent * Math.pow(a, exponent - 1)];
    } else {
      [value, derivatives] = RULES[op](...values);
    }
    if (!Number.isFinite(value)) throw new EngineError("non-finite-result", { operation: op, value });
    derivatives.forEach((d, slot) => {
      if (!Number.isFinite(d)) throw new EngineError("non-finite-local-derivative", { operation: op, slot, value: d });
    });
    return new Node(value, op, operands, derivatives, operands.some((n) => n.tracked));
  }
  detach(node) { return new Node(node.value, "detached", [], [], false); }
  value(node) { return node.value; }
  tracked(node) { return node.tracked; }
  gradient(node) { return node.grad; }
  backward(output, seed) {
    if (!output.tracked) throw new EngineError("untracked-output", { operation: output.operation });
    if (!Number.isFinite(seed)) throw new EngineError("non-finite-seed", { seed });
    const order = topology(output);
    const adjoint = new Map(order.filter((n) => n.tracked).map((n) => [n, 0]));
    adjoint.set(output, seed);
    const edges = [];
    for (let i = order.length - 1; i >= 0; i--) {
      const consumer = order[i];
      const upstream = adjoint.get(consumer) ?? 0;
      consumer.operands.forEach((operand, slot) => {
        const d = consumer.derivatives[slot];
        const contribution = upstream * d;
        if (!Number.isFinite(contribution)) {
          throw new EngineError("non-finite-contribution", { consumer, slot, operand, upstream, local_derivative: d });
        }
        let before = null, after = null;
        if (operand.tracked) {
          before = adjoint.get(operand);
          after = before + contribution;
          if (!Number.isFinite(after)) throw new EngineError("non-finite-pass-adjoint", { node: operand, previous: before, contribution });
          adjoint.set(operand, after);
        }
        edges.push({ consumer, slot, operand, local_derivative: d, upstream, contribution, before, after });
      });
    }
    for (const node of order) {
      if (node.tracked && !Number.isFinite(node.grad + adjoint.get(node))) {
        throw new EngineError("non-finite-accumulated-gradient", { node, stored: node.grad, pass_adjoint: adjoint.get(node) });
      }
    }
    for (const node of order) if (node.tracked) node.grad += adjoint.get(node);
    const nodes = order.map((n) => ({ node: n, pass_adjoint: adjoint.get(n) ?? null, stored_gradient: n.grad }));
    this.record = { seed, nodes, edges };
  }
  zeroGrad(output) { for (const node of topology(output)) node.grad = 0; }
  passRecord() { return this.record; }
}
