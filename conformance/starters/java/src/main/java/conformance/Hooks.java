// Engine hooks: EDIT THIS FILE to connect your engine to the conformance kit.
package conformance;

import java.util.List;

/**
 * Adapter.java (do not edit it) speaks the protocol and calls the methods of {@link Engine}
 * below, on a fresh Engine per case. Each method says what the contract ({@code conformance docs
 * contract}) expects of it. Until you fill one in it throws {@code Kit.notConnected(...)}, which
 * the adapter reports as an error for the case, so the kit runs from the first minute and tells
 * you which hook to connect next. Add your engine to pom.xml's dependencies (or its sources
 * under src/main/java).
 *
 * <p>A node is whatever your engine uses: an object (told apart by identity) or an Integer index
 * into a tape (by value); the loop only hands it back to you. When your engine refuses an
 * operation the contract says must fail, throw {@code new Kit.EngineError(kind)} with exactly the
 * fields of that kind (docs/contract.md sections 3 to 5; Kit.java lists them), e.g. {@code throw
 * new Kit.EngineError("non-finite-leaf").text("operation", "variable").number("value", v);}. Any
 * other exception becomes an error reply for that case with its message, and the loop goes on.
 * The kit's types live under {@code Kit.}, so your engine's own EngineError or Node can be
 * imported here without a clash.
 *
 * <p>Walk the graph without recursion (an explicit stack): a case is a chain a million nodes
 * deep, and the JVM's default stack overflows a recursive walk at 10,000 (the loop's thread has a
 * 1 GiB stack, your engine's other users do not). What you print with System.out goes to stderr.
 */
public final class Hooks {
    private Hooks() {}

    // ---- config block: what your engine supports (sent in the hello reply) -------------------
    static final String ENGINE_NAME = "my-engine";
    static final String ENGINE_VERSION = "0.1.0";
    /**
     * The ops your engine has, among add sub mul div neg pow exp log tanh relu detach;
     * also sigmoid and sqrt, the optional ops, only if your engine has them.
     */
    static final List<String> OPS = List.of("add", "sub", "mul", "div", "neg", "pow", "exp", "log", "tanh", "relu", "detach");
    /** The levels you report honestly: values gradients errors, and trace/order once passRecord works. */
    static final List<String> LEVELS = List.of("values", "gradients", "errors");
    /** "seed" if backward accepts a seed other than 1. (Adapter.java adds "repeat": it runs repeated steps itself.) */
    static final List<String> FEATURES = List.of("seed");
    // ---- end of config block -------------------------------------------------------------------

    /** Your engine behind the hooks; a fresh one per case, so no case sees another's graph. */
    public static final class Engine {
        /** A tracked leaf. A non-finite value throws EngineError non-finite-leaf (operation "variable", value). */
        public Object variable(double value) {
            throw Kit.notConnected("Engine.variable");
        }

        /** An untracked leaf; non-finite-leaf as for variable, with operation "constant". */
        public Object constant(double value) {
            throw Kit.notConnected("Engine.constant");
        }

        /**
         * The result node of op (add sub mul div: two operands; neg exp log tanh relu sigmoid sqrt pow: one),
         * operands in slot order; exponent is pow's constant (null for the other ops). A non-finite
         * value throws non-finite-result (operation, value); a finite value with a non-finite local
         * derivative throws non-finite-local-derivative (operation, slot, value of the derivative).
         */
        public Object apply(String op, List<Object> operands, Double exponent) {
            throw Kit.notConnected("Engine.apply");
        }

        /** An untracked leaf with node's value and no edge. */
        public Object detach(Object node) {
            throw Kit.notConnected("Engine.detach");
        }

        /** The node's forward value. */
        public double value(Object node) {
            throw Kit.notConnected("Engine.value");
        }

        /** Whether the node takes part in gradients (a variable, or an op with a tracked operand). */
        public boolean tracked(Object node) {
            throw Kit.notConnected("Engine.tracked");
        }

        /**
         * Backward from output with this seed (docs/contract.md section 5). Checks in order:
         * untracked-output, non-finite-seed, then per edge non-finite-contribution and
         * non-finite-pass-adjoint, then per node non-finite-accumulated-gradient; commit only if all
         * pass.
         */
        public void backward(Object output, double seed) {
            throw Kit.notConnected("Engine.backward");
        }

        /** Sets the stored gradient of every tracked node reachable from output to 0. */
        public void zeroGrad(Object output) {
            throw Kit.notConnected("Engine.zeroGrad");
        }

        /** The stored gradient of a tracked node. */
        public double gradient(Object node) {
            throw Kit.notConnected("Engine.gradient");
        }

        /**
         * Optional, for the trace and order levels: what the last successful backward did (see
         * Kit.PassRecord). Add "trace"/"order" to LEVELS when it works.
         */
        public Kit.PassRecord passRecord() {
            throw Kit.notConnected("Engine.passRecord");
        }
    }
}
