//! The tiny GPT of docs/contract.md section 11, built only from the engine's scalar ops.
//!
//! No derivative is written by hand, so a correct gradient here is a correct
//! engine. The model follows the reference (`reference/model.py`) operation
//! for operation: token and position embeddings, RMSNorm (eps 1e-5, no gain)
//! after the embeddings and before each block, causal multi-head attention
//! with a KV cache, a softmax that subtracts the row max as a constant, an
//! MLP with ReLU at 4x width, an lm_head and the mean cross-entropy over
//! positions. No biases.
//!
//! Parameters are plain values between steps: each step builds a fresh
//! [`Tape`] whose first nodes are one variable per parameter, in matrix order,
//! so the loss's backward leaves each parameter's gradient on its variable.

use crate::error::Error;
use crate::scalar::Scalar;
use crate::tape::Tape;

/// The model's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Transformer blocks.
    pub n_layer: usize,
    /// Embedding width.
    pub n_embd: usize,
    /// Attention heads; `n_embd` must be a multiple.
    pub n_head: usize,
    /// Longest context (positions).
    pub block_size: usize,
    /// Symbols, the boundary token included.
    pub vocab_size: usize,
}

impl Config {
    /// The reference width: 1 layer, 16 embedding dims, 4 heads, block 16, 27 symbols.
    pub fn reference() -> Config {
        Config {
            n_layer: 1,
            n_embd: 16,
            n_head: 4,
            block_size: 16,
            vocab_size: 27,
        }
    }

    /// Every weight matrix as (name, rows, columns), in the reference's order.
    pub fn shapes(&self) -> Vec<(String, usize, usize)> {
        let e = self.n_embd;
        let mut shapes = vec![
            ("wte".to_string(), self.vocab_size, e),
            ("wpe".to_string(), self.block_size, e),
            ("lm_head".to_string(), self.vocab_size, e),
        ];
        for layer in 0..self.n_layer {
            for (name, rows, cols) in [
                ("attn_wq", e, e),
                ("attn_wk", e, e),
                ("attn_wv", e, e),
                ("attn_wo", e, e),
                ("mlp_fc1", 4 * e, e),
                ("mlp_fc2", e, 4 * e),
            ] {
                shapes.push((format!("layer{layer}.{name}"), rows, cols));
            }
        }
        shapes
    }
}

/// The boundary token that starts and ends every document; a-z are tokens 0-25.
pub const BOS: usize = 26;

/// `[BOS, letters..., BOS]`, or `None` when the document has a character outside a-z.
pub fn tokenize(document: &str) -> Option<Vec<usize>> {
    let mut tokens = vec![BOS];
    for c in document.chars() {
        if !c.is_ascii_lowercase() {
            return None;
        }
        tokens.push(c as usize - 'a' as usize);
    }
    tokens.push(BOS);
    Some(tokens)
}

/// The tiny GPT: its shape and every parameter's value, matrix by matrix, row by row.
#[derive(Clone, Debug)]
pub struct Gpt {
    /// The shape.
    pub config: Config,
    /// Parameter values in the order of [`Config::shapes`].
    pub values: Vec<f64>,
}

type Vector = Vec<Scalar>;

/// The parameters of one step, as variables on its tape, by matrix.
struct Weights {
    matrices: Vec<Vec<Vector>>,
}

impl Weights {
    fn matrix(&self, index: usize) -> &[Vector] {
        &self.matrices[index]
    }
}

fn chain_sum(terms: &[Scalar]) -> Result<Scalar, Error> {
    let mut total = terms[0].clone();
    for term in &terms[1..] {
        total = total.add(term)?;
    }
    Ok(total)
}

fn dot(x: &[Scalar], y: &[Scalar]) -> Result<Scalar, Error> {
    let products = x
        .iter()
        .zip(y)
        .map(|(a, b)| a.mul(b))
        .collect::<Result<Vec<_>, _>>()?;
    chain_sum(&products)
}

fn linear(w: &[Vector], x: &[Scalar]) -> Result<Vector, Error> {
    w.iter().map(|row| dot(row, x)).collect()
}

fn add_vec(x: &[Scalar], y: &[Scalar]) -> Result<Vector, Error> {
    x.iter().zip(y).map(|(a, b)| a.add(b)).collect()
}

fn rmsnorm(x: &[Scalar]) -> Result<Vector, Error> {
    let mean_square = dot(x, x)?.div(&x[0].constant(x.len() as f64)?)?;
    let scale = mean_square.add(&x[0].constant(1e-5)?)?.pow(-0.5)?;
    x.iter().map(|xi| xi.mul(&scale)).collect()
}

fn softmax(logits: &[Scalar]) -> Result<Vector, Error> {
    // The max is a constant leaf: it keeps exp in range and carries no gradient.
    let highest = logits
        .iter()
        .map(Scalar::value)
        .fold(f64::NEG_INFINITY, f64::max);
    let shift = logits[0].constant(highest)?;
    let exps = logits
        .iter()
        .map(|l| l.sub(&shift)?.exp())
        .collect::<Result<Vec<_>, _>>()?;
    let total = chain_sum(&exps)?;
    exps.iter().map(|e| e.div(&total)).collect()
}

impl Gpt {
    /// A model with these parameter values (as many as [`Config::shapes`] needs).
    ///
    /// # Panics
    ///
    /// When the count is wrong or the heads do not divide the embedding width.
    pub fn new(config: Config, values: Vec<f64>) -> Gpt {
        let count: usize = config.shapes().iter().map(|(_, r, c)| r * c).sum();
        assert_eq!(values.len(), count, "the model has {count} parameters");
        assert_eq!(config.n_embd % config.n_head, 0, "heads must divide n_embd");
        Gpt { config, values }
    }

    /// Build the mean cross-entropy of `tokens` on `tape`: returns the loss and
    /// the parameter variables (in the order of `values`), which are the tape's
    /// first nodes.
    ///
    /// # Panics
    ///
    /// For fewer than two tokens or a token outside the vocabulary.
    pub fn loss(&self, tape: &Tape, tokens: &[usize]) -> Result<(Scalar, Vec<Scalar>), Error> {
        let cfg = self.config;
        let n = (tokens.len() - 1).min(cfg.block_size);
        assert!(n >= 1, "the loss needs at least two tokens");
        assert!(
            tokens.iter().all(|&t| t < cfg.vocab_size),
            "token outside the vocabulary"
        );
        let mut parameters = Vec::with_capacity(self.values.len());
        let mut matrices = Vec::new();
        let mut next = self.values.iter();
        for (_, rows, cols) in cfg.shapes() {
            let mut matrix = Vec::with_capacity(rows);
            for _ in 0..rows {
                let row = (0..cols)
                    .map(|_| tape.variable(*next.next().expect("counted in new")))
                    .collect::<Result<Vec<_>, _>>()?;
                parameters.extend(row.iter().cloned());
                matrix.push(row);
            }
            matrices.push(matrix);
        }
        let weights = Weights { matrices };
        let mut keys: Vec<Vec<Vector>> = vec![Vec::new(); cfg.n_layer];
        let mut values: Vec<Vec<Vector>> = vec![Vec::new(); cfg.n_layer];
        let mut total: Option<Scalar> = None;
        for pos in 0..n {
            let logits = self.logits(&weights, tokens[pos], pos, &mut keys, &mut values)?;
            let probs = softmax(&logits)?;
            // cross-entropy at this position: -log p(next token)
            let term = probs[tokens[pos + 1]].log()?.neg()?;
            total = Some(match total {
                None => term,
                Some(total) => total.add(&term)?,
            });
        }
        let total = total.expect("n >= 1");
        let loss = total.div(&tape.constant(n as f64)?)?;
        Ok((loss, parameters))
    }

    fn logits(
        &self,
        w: &Weights,
        token: usize,
        pos: usize,
        keys: &mut [Vec<Vector>],
        values: &mut [Vec<Vector>],
    ) -> Result<Vector, Error> {
        let cfg = self.config;
        let hd = cfg.n_embd / cfg.n_head;
        let mut x = add_vec(&w.matrix(0)[token], &w.matrix(1)[pos])?;
        x = rmsnorm(&x)?;
        for li in 0..cfg.n_layer {
            let base = 3 + 6 * li;
            let residual = x.clone();
            x = rmsnorm(&x)?;
            let q = linear(w.matrix(base), &x)?;
            keys[li].push(linear(w.matrix(base + 1), &x)?);
            values[li].push(linear(w.matrix(base + 2), &x)?);
            let scale = x[0].constant((hd as f64).sqrt())?;
            let mut attended = Vec::with_capacity(cfg.n_embd);
            for h in 0..cfg.n_head {
                let (lo, hi) = (h * hd, (h + 1) * hd);
                let logits = keys[li]
                    .iter()
                    .map(|k| dot(&q[lo..hi], &k[lo..hi])?.div(&scale))
                    .collect::<Result<Vec<_>, _>>()?;
                let weights = softmax(&logits)?;
                for j in lo..hi {
                    let terms = weights
                        .iter()
                        .zip(&values[li])
                        .map(|(wt, v)| wt.mul(&v[j]))
                        .collect::<Result<Vec<_>, _>>()?;
                    attended.push(chain_sum(&terms)?);
                }
            }
            x = add_vec(&linear(w.matrix(base + 3), &attended)?, &residual)?;
            let residual = x.clone();
            let hidden = linear(w.matrix(base + 4), &rmsnorm(&x)?)?
                .iter()
                .map(Scalar::relu)
                .collect::<Result<Vec<_>, _>>()?;
            x = add_vec(&linear(w.matrix(base + 5), &hidden)?, &residual)?;
        }
        linear(w.matrix(2), &x)
    }
}

/// Adam with a learning rate that decays linearly to zero (docs/contract.md section 11),
/// operation for operation as `reference/adam.py`.
#[derive(Clone, Debug)]
pub struct Adam {
    /// The run's length, for the decay.
    pub total_steps: usize,
    m: Vec<f64>,
    v: Vec<f64>,
}

impl Adam {
    /// lr 0.01, beta1 0.85, beta2 0.99, eps 1e-8, for `parameters` values and a run of `total_steps`.
    pub fn new(parameters: usize, total_steps: usize) -> Adam {
        Adam {
            total_steps,
            m: vec![0.0; parameters],
            v: vec![0.0; parameters],
        }
    }

    /// Apply update number `index` (0-based) to `values` from `gradients`.
    pub fn step(&mut self, index: usize, values: &mut [f64], gradients: &[f64]) {
        let (lr, b1, b2, eps) = (0.01, 0.85f64, 0.99f64, 1e-8);
        let lr = lr * (1.0 - index as f64 / self.total_steps as f64);
        let c1 = 1.0 - b1.powi(index as i32 + 1);
        let c2 = 1.0 - b2.powi(index as i32 + 1);
        for (i, (value, &g)) in values.iter_mut().zip(gradients).enumerate() {
            self.m[i] = b1 * self.m[i] + (1.0 - b1) * g;
            self.v[i] = b2 * self.v[i] + (1.0 - b2) * (g * g);
            *value -= lr * (self.m[i] / c1) / ((self.v[i] / c2).sqrt() + eps);
        }
    }
}
