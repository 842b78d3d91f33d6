// A tiny correct engine written into the C++ starter's hooks, for tests/test_starters.py.
// It follows the contract (docs/contract.md sections 3 to 6) with <cmath> on a tape of
// nodes: every operand edge summed, fresh pass adjoints per backward, every check before the
// commit, the canonical depth-first post-order (iterative), and a pass record for trace and order.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace hooks {

using Handle = std::size_t;
inline std::size_t node_key(const Handle& node) { return node; }

}  // namespace hooks

#include "kit.hpp"

namespace hooks {

/// The engine's own types, named as the kit's: they must compile beside conformance::'s.
struct EngineError {};
struct Node {};
struct PassRecord {};

inline const char* const ENGINE_NAME = "starter-test-engine";
inline const char* const ENGINE_VERSION = "0.1.0";
inline const std::vector<std::string> OPS = {"add", "sub", "mul", "div", "neg", "pow", "exp",
                                             "log", "tanh", "relu", "sigmoid", "sqrt", "detach"};
inline const std::vector<std::string> LEVELS = {"values", "gradients", "errors", "trace", "order"};
inline const std::vector<std::string> FEATURES = {"seed"};

class Engine {
public:
    Handle variable(double value) {
        if (value == 12345.0) {
            // Stray prints, as an engine's debug lines: the loop must keep them off the protocol.
            std::cout << "engine noise on stdout" << std::endl;
            std::printf("engine noise written with printf\n");
            std::fflush(stdout);
        }
        return leaf(value, "variable");
    }
    Handle constant(double value) { return leaf(value, "constant"); }

    Handle apply(const std::string& op, const std::vector<Handle>& operands, double c) {
        double a = tape_[operands[0]].value;
        double b = operands.size() > 1 ? tape_[operands[1]].value : 0.0;
        double value;
        std::vector<double> d;
        // The op table: value and local derivatives from the forward values, as the contract writes them.
        if (op == "add") value = a + b, d = {1.0, 1.0};
        else if (op == "sub") value = a - b, d = {1.0, -1.0};
        else if (op == "mul") value = a * b, d = {b, a};
        else if (op == "div") value = a / b, d = {1.0 / b, -(value / b)};
        else if (op == "neg") value = -a, d = {-1.0};
        else if (op == "pow") value = std::pow(a, c), d = {c == 0.0 ? 0.0 : c * std::pow(a, c - 1.0)};
        else if (op == "exp") value = std::exp(a), d = {value};
        else if (op == "log") value = std::log(a), d = {1.0 / a};
        else if (op == "tanh") {
            value = std::tanh(a), d = {1.0 - value * value};
        } else if (op == "relu") value = a > 0.0 ? a : 0.0, d = {a > 0.0 ? 1.0 : 0.0};
        else if (op == "sigmoid") {
            // The stable form: exp never overflows, and the value is subnormal or +0.0 far below zero.
            double e = std::exp(a >= 0.0 ? -a : a);
            value = a >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e), d = {value * (1.0 - value)};
        } else if (op == "sqrt") value = std::sqrt(a), d = {0.5 / value};
        else throw std::runtime_error("unknown op " + op);
        if (!std::isfinite(value))
            throw conformance::EngineError("non-finite-result").text("operation", op).number("value", value);
        for (std::size_t slot = 0; slot < d.size(); ++slot)
            if (!std::isfinite(d[slot]))
                throw conformance::EngineError("non-finite-local-derivative")
                    .text("operation", op)
                    .slot("slot", slot)
                    .number("value", d[slot]);
        bool tracked = false;
        for (Handle n : operands) tracked = tracked || tape_[n].tracked;
        return push(value, op, operands, d, tracked);
    }

    Handle detach(const Handle& node) { return push(tape_[node].value, "detached", {}, {}, false); }
    double value(const Handle& node) { return tape_[node].value; }
    bool tracked(const Handle& node) { return tape_[node].tracked; }
    double gradient(const Handle& node) { return tape_[node].grad; }

    void backward(const Handle& output, double seed) {
        if (!tape_[output].tracked)
            throw conformance::EngineError("untracked-output").text("operation", tape_[output].operation);
        if (!std::isfinite(seed)) throw conformance::EngineError("non-finite-seed").number("seed", seed);
        std::vector<Handle> order = topology(output);
        std::vector<double> adjoint(tape_.size(), 0.0);
        adjoint[output] = seed;
        conformance::PassRecord record;
        record.seed = seed;
        for (auto it = order.rbegin(); it != order.rend(); ++it) {
            Handle consumer = *it;
            double upstream = tape_[consumer].tracked ? adjoint[consumer] : 0.0;
            for (std::size_t slot = 0; slot < tape_[consumer].operands.size(); ++slot) {
                Handle operand = tape_[consumer].operands[slot];
                double d = tape_[consumer].derivatives[slot];
                double contribution = upstream * d;
                if (!std::isfinite(contribution))
                    throw conformance::EngineError("non-finite-contribution")
                        .node("consumer", consumer)
                        .slot("slot", slot)
                        .node("operand", operand)
                        .number("upstream", upstream)
                        .number("local_derivative", d);
                std::optional<double> before, after;
                if (tape_[operand].tracked) {
                    double sum = adjoint[operand] + contribution;
                    if (!std::isfinite(sum))
                        throw conformance::EngineError("non-finite-pass-adjoint")
                            .node("node", operand)
                            .number("previous", adjoint[operand])
                            .number("contribution", contribution);
                    before = adjoint[operand], after = sum;
                    adjoint[operand] = sum;
                }
                record.edges.push_back({consumer, slot, operand, d, upstream, contribution, before, after});
            }
        }
        for (Handle n : order)
            if (tape_[n].tracked && !std::isfinite(tape_[n].grad + adjoint[n]))
                throw conformance::EngineError("non-finite-accumulated-gradient")
                    .node("node", n)
                    .number("stored", tape_[n].grad)
                    .number("pass_adjoint", adjoint[n]);
        for (Handle n : order) {
            bool tracked = tape_[n].tracked;
            if (tracked) tape_[n].grad += adjoint[n];
            record.nodes.push_back({n, tracked ? std::optional<double>(adjoint[n]) : std::nullopt,
                                    tracked ? std::optional<double>(tape_[n].grad) : std::nullopt});
        }
        record_ = std::move(record);
    }

    void zero_grad(const Handle& output) {
        for (Handle n : topology(output)) tape_[n].grad = 0.0;
    }

    conformance::PassRecord pass_record() { return std::move(record_); }

private:
    struct Entry {
        double value;
        std::string operation;
        std::vector<Handle> operands;
        std::vector<double> derivatives;
        bool tracked;
        double grad;
    };
    std::vector<Entry> tape_;
    conformance::PassRecord record_;

    Handle push(double value, const std::string& operation, std::vector<Handle> operands, std::vector<double> d,
                bool tracked) {
        tape_.push_back({value, operation, std::move(operands), std::move(d), tracked, 0.0});
        return tape_.size() - 1;
    }

    Handle leaf(double value, const char* operation) {
        if (!std::isfinite(value))
            throw conformance::EngineError("non-finite-leaf").text("operation", operation).number("value", value);
        return push(value, operation, {}, {}, std::string(operation) == "variable");
    }

    /// Depth-first post-order from the output, operands in slot order, with an explicit stack.
    std::vector<Handle> topology(Handle output) {
        std::vector<Handle> order;
        std::vector<bool> seen(tape_.size(), false);
        std::vector<std::pair<Handle, std::size_t>> stack = {{output, 0}};
        seen[output] = true;
        while (!stack.empty()) {
            auto& [node, slot] = stack.back();
            if (slot < tape_[node].operands.size()) {
                Handle operand = tape_[node].operands[slot++];
                if (!seen[operand]) {
                    seen[operand] = true;
                    stack.push_back({operand, 0});
                }
            } else {
                order.push_back(node);
                stack.pop_back();
            }
        }
        return order;
    }
};

}  // namespace hooks
