// A tiny correct engine written into the Java starter's hooks, for tests/test_starters.py.
package conformance;

import java.util.ArrayList;
import java.util.List;

/**
 * It follows the contract (docs/contract.md sections 3 to 6) with java.lang.Math on a tape of
 * nodes: every operand edge summed, fresh pass adjoints per backward, every check before the
 * commit, the canonical depth-first post-order with an explicit stack (a million-node chain is a
 * case), and a pass record for trace and order. Handles are Integer indices into the tape.
 */
public final class Hooks {
    private Hooks() {}

    static final String ENGINE_NAME = "starter-test-engine";
    static final String ENGINE_VERSION = "0.1.0";
    static final List<String> OPS = List.of("add", "sub", "mul", "div", "neg", "pow", "exp", "log", "tanh", "relu", "sigmoid", "sqrt", "detach");
    static final List<String> LEVELS = List.of("values", "gradients", "errors", "trace", "order");
    static final List<String> FEATURES = List.of("seed");

    /** The engine's own types, named as the kit's: they must compile beside Kit's. */
    static final class EngineError extends RuntimeException {
        private static final long serialVersionUID = 1L;
    }

    static final class Node {}

    private static final class Entry {
        final double value;
        final String operation;
        final int[] operands;
        final double[] derivatives;
        final boolean tracked;
        double grad;

        Entry(double value, String operation, int[] operands, double[] derivatives, boolean tracked) {
            this.value = value;
            this.operation = operation;
            this.operands = operands;
            this.derivatives = derivatives;
            this.tracked = tracked;
        }
    }

    public static final class Engine {
        private final List<Entry> tape = new ArrayList<>();
        private Kit.PassRecord record;

        private Object push(Entry entry) {
            tape.add(entry);
            return tape.size() - 1;
        }

        private Entry at(Object node) {
            return tape.get((Integer) node);
        }

        private Object leaf(double value, String operation) {
            if (!Double.isFinite(value))
                throw new Kit.EngineError("non-finite-leaf").text("operation", operation).number("value", value);
            return push(new Entry(value, operation, new int[0], new double[0], operation.equals("variable")));
        }

        public Object variable(double value) {
            if (value == 12345.0) {
                // A stray print, as an engine's debug line: the loop must keep it off the protocol.
                System.out.println("engine noise on stdout");
            }
            return leaf(value, "variable");
        }

        public Object constant(double value) {
            return leaf(value, "constant");
        }

        public Object apply(String op, List<Object> operands, Double exponent) {
            double a = at(operands.get(0)).value;
            double b = operands.size() > 1 ? at(operands.get(1)).value : 0.0;
            double c = exponent == null ? 0.0 : exponent;
            double value;
            double[] d;
            // The op table: value and local derivatives from the forward values, as the contract writes them.
            switch (op) {
                case "add" -> { value = a + b; d = new double[] {1.0, 1.0}; }
                case "sub" -> { value = a - b; d = new double[] {1.0, -1.0}; }
                case "mul" -> { value = a * b; d = new double[] {b, a}; }
                case "div" -> { value = a / b; d = new double[] {1.0 / b, -(value / b)}; }
                case "neg" -> { value = -a; d = new double[] {-1.0}; }
                case "pow" -> { value = Math.pow(a, c); d = new double[] {c == 0.0 ? 0.0 : c * Math.pow(a, c - 1.0)}; }
                case "exp" -> { value = Math.exp(a); d = new double[] {value}; }
                case "log" -> { value = Math.log(a); d = new double[] {1.0 / a}; }
                case "tanh" -> {
                    value = Math.tanh(a);
                    d = new double[] {1.0 - value * value};
                }
                case "relu" -> { value = a > 0.0 ? a : 0.0; d = new double[] {a > 0.0 ? 1.0 : 0.0}; }
                case "sigmoid" -> {
                    // The stable form: exp never overflows, and the value is subnormal or +0.0 far below zero.
                    double e = Math.exp(a >= 0.0 ? -a : a);
                    value = a >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
                    d = new double[] {value * (1.0 - value)};
                }
                case "sqrt" -> { value = Math.sqrt(a); d = new double[] {0.5 / value}; }
                default -> throw new IllegalArgumentException("unknown op " + op);
            }
            if (!Double.isFinite(value))
                throw new Kit.EngineError("non-finite-result").text("operation", op).number("value", value);
            for (int slot = 0; slot < d.length; slot++)
                if (!Double.isFinite(d[slot]))
                    throw new Kit.EngineError("non-finite-local-derivative").text("operation", op).slot("slot", slot).number("value", d[slot]);
            int[] indices = new int[operands.size()];
            boolean tracked = false;
            for (int k = 0; k < indices.length; k++) {
                indices[k] = (Integer) operands.get(k);
                tracked |= tape.get(indices[k]).tracked;
            }
            return push(new Entry(value, op, indices, d, tracked));
        }

        public Object detach(Object node) {
            return push(new Entry(at(node).value, "detached", new int[0], new double[0], false));
        }

        public double value(Object node) {
            return at(node).value;
        }

        public boolean tracked(Object node) {
            return at(node).tracked;
        }

        public double gradient(Object node) {
            return at(node).grad;
        }

        /** Depth-first post-order from the output, operands in slot order, with an explicit stack. */
        private int[] topology(int output) {
            int[] order = new int[tape.size()];
            int count = 0;
            boolean[] seen = new boolean[tape.size()];
            int[] stackNode = new int[tape.size()];
            int[] stackSlot = new int[tape.size()];
            int top = 0;
            stackNode[0] = output;
            seen[output] = true;
            while (top >= 0) {
                Entry entry = tape.get(stackNode[top]);
                if (stackSlot[top] < entry.operands.length) {
                    int operand = entry.operands[stackSlot[top]++];
                    if (!seen[operand]) {
                        seen[operand] = true;
                        top++;
                        stackNode[top] = operand;
                        stackSlot[top] = 0;
                    }
                } else {
                    order[count++] = stackNode[top--];
                }
            }
            return java.util.Arrays.copyOf(order, count);
        }

        public void backward(Object outputNode, double seed) {
            int output = (Integer) outputNode;
            if (!tape.get(output).tracked)
                throw new Kit.EngineError("untracked-output").text("operation", tape.get(output).operation);
            if (!Double.isFinite(seed)) throw new Kit.EngineError("non-finite-seed").number("seed", seed);
            int[] order = topology(output);
            double[] adjoint = new double[tape.size()];
            adjoint[output] = seed;
            List<Kit.PassEdge> edges = new ArrayList<>();
            for (int k = order.length - 1; k >= 0; k--) {
                int consumer = order[k];
                Entry entry = tape.get(consumer);
                double upstream = entry.tracked ? adjoint[consumer] : 0.0;
                for (int slot = 0; slot < entry.operands.length; slot++) {
                    int operand = entry.operands[slot];
                    double d = entry.derivatives[slot];
                    double contribution = upstream * d;
                    if (!Double.isFinite(contribution))
                        throw new Kit.EngineError("non-finite-contribution").node("consumer", consumer).slot("slot", slot)
                                .node("operand", operand).number("upstream", upstream).number("local_derivative", d);
                    Double before = null, after = null;
                    if (tape.get(operand).tracked) {
                        double sum = adjoint[operand] + contribution;
                        if (!Double.isFinite(sum))
                            throw new Kit.EngineError("non-finite-pass-adjoint").node("node", operand)
                                    .number("previous", adjoint[operand]).number("contribution", contribution);
                        before = adjoint[operand];
                        after = sum;
                        adjoint[operand] = sum;
                    }
                    edges.add(new Kit.PassEdge(consumer, slot, operand, d, upstream, contribution, before, after));
                }
            }
            for (int n : order) {
                Entry entry = tape.get(n);
                if (entry.tracked && !Double.isFinite(entry.grad + adjoint[n]))
                    throw new Kit.EngineError("non-finite-accumulated-gradient").node("node", n).number("stored", entry.grad)
                            .number("pass_adjoint", adjoint[n]);
            }
            List<Kit.PassNode> nodes = new ArrayList<>();
            for (int n : order) {
                Entry entry = tape.get(n);
                if (entry.tracked) entry.grad += adjoint[n];
                nodes.add(new Kit.PassNode(n, entry.tracked ? adjoint[n] : null, entry.tracked ? entry.grad : null));
            }
            record = new Kit.PassRecord(seed, nodes, edges);
        }

        public void zeroGrad(Object output) {
            for (int n : topology((Integer) output)) tape.get(n).grad = 0.0;
        }

        public Kit.PassRecord passRecord() {
            return record;
        }
    }
}
