//! A network's architecture as data (`BlockSpec`), and its parameters by name: what a model
//! file stores beside the weights. Tensors are named by their place in the network
//! (`2.linear.weight`, `0.residual.1.layer_norm.gamma`), so a file says which weight is
//! which and a reordering of parameters cannot silently load weights into the wrong layer.

use candle_core::{Device, Tensor, Var};

use super::conv::{Conv2d, ConvShape};
use super::layers::{Act, Block, HeadSpan, LayerNorm, Linear, Net};
use super::{NnError, Result};

/// A network's architecture without its weights, for model files.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockSpec {
    Linear {
        inp: usize,
        out: usize,
        bias: bool,
    },
    Conv {
        shape: ConvShape,
        bias: bool,
    },
    Act(Act),
    LayerNorm {
        dim: usize,
        eps: f64,
    },
    Residual(Vec<BlockSpec>),
    Head(Vec<HeadSpan>),
    Dropout(f64),
    Pad {
        before: usize,
        after: usize,
    },
    LabelMaps {
        start: usize,
        classes: usize,
        pixels: usize,
    },
}

impl Net {
    /// The architecture (batch norm is not supported in released networks).
    pub fn spec(&self) -> Result<Vec<BlockSpec>> {
        fn walk(bs: &[Block]) -> Result<Vec<BlockSpec>> {
            bs.iter()
                .map(|b| {
                    Ok(match b {
                        Block::Linear(l) => BlockSpec::Linear {
                            inp: l.in_dim(),
                            out: l.out_dim(),
                            bias: l.b.is_some(),
                        },
                        Block::Conv(c) => BlockSpec::Conv {
                            shape: c.shape,
                            bias: c.b.is_some(),
                        },
                        Block::Act(a) => BlockSpec::Act(*a),
                        Block::LayerNorm(n) => BlockSpec::LayerNorm {
                            dim: n.gamma.dims()[0],
                            eps: n.eps,
                        },
                        Block::Residual(inner) => BlockSpec::Residual(walk(inner)?),
                        Block::Head(h) => BlockSpec::Head(h.clone()),
                        Block::Dropout(p) => BlockSpec::Dropout(*p),
                        Block::Pad { before, after } => BlockSpec::Pad {
                            before: *before,
                            after: *after,
                        },
                        Block::LabelMaps {
                            start,
                            classes,
                            pixels,
                        } => BlockSpec::LabelMaps {
                            start: *start,
                            classes: *classes,
                            pixels: *pixels,
                        },
                        Block::BatchNorm(_) => {
                            return Err(NnError::Invalid(
                                "batch norm cannot be saved in a released model".into(),
                            ));
                        }
                    })
                })
                .collect()
        }
        walk(&self.blocks)
    }

    /// A deep copy whose weights no longer move with this network's training.
    pub fn snapshot(&self) -> Result<Net> {
        let params = self
            .params()
            .iter()
            .map(|p| p.as_tensor().copy())
            .collect::<candle_core::Result<Vec<_>>>()?;
        Net::from_spec(&self.spec()?, &params, &self.device)
    }

    /// Rebuilds a network from its architecture and its parameters in [`Net::params`] order.
    pub fn from_spec(spec: &[BlockSpec], params: &[Tensor], dev: &Device) -> Result<Net> {
        let params: Vec<Tensor> = params
            .iter()
            .map(|t| t.to_device(dev))
            .collect::<candle_core::Result<_>>()?;
        let mut k = 0;
        let blocks = walk(spec, &params, &mut k)?;
        if k != params.len() {
            return Err(NnError::Invalid(
                "the model file has more weights than its architecture uses".into(),
            ));
        }
        Ok(Net::new(blocks, dev))
    }
}

/// The next weight, `k` on, checked against the shape the architecture needs.
fn take(params: &[Tensor], k: &mut usize, shape: &[usize]) -> Result<Var> {
    let t = params.get(*k).ok_or_else(|| {
        NnError::Invalid("the model file has fewer weights than its architecture needs".into())
    })?;
    if t.dims() != shape {
        return Err(NnError::Invalid(format!(
            "weight {} has shape {:?} but the architecture needs {:?}",
            *k,
            t.dims(),
            shape
        )));
    }
    *k += 1;
    Ok(Var::from_tensor(t)?)
}
/// The blocks `spec` describes, their weights taken from `params` in order from `k`.
fn walk(spec: &[BlockSpec], params: &[Tensor], k: &mut usize) -> Result<Vec<Block>> {
    spec.iter()
        .map(|s| {
            Ok(match s {
                BlockSpec::Linear { inp, out, bias } => {
                    let w = take(params, k, &[*out, *inp])?;
                    let b = if *bias {
                        Some(take(params, k, &[*out])?)
                    } else {
                        None
                    };
                    Block::Linear(Linear { w, b })
                }
                BlockSpec::Conv { shape, bias } => {
                    shape.out_hw()?;
                    let w = take(params, k, &shape.weight_dims())?;
                    let b = if *bias {
                        Some(take(params, k, &[shape.cout])?.as_tensor().clone())
                    } else {
                        None
                    };
                    Block::Conv(Conv2d::from_weights(*shape, w.as_tensor().clone(), b)?)
                }
                BlockSpec::Act(a) => Block::Act(*a),
                BlockSpec::LayerNorm { dim, eps } => Block::LayerNorm(LayerNorm {
                    gamma: take(params, k, &[*dim])?,
                    beta: take(params, k, &[*dim])?,
                    eps: *eps,
                }),
                BlockSpec::Residual(inner) => Block::Residual(walk(inner, params, k)?),
                BlockSpec::Head(h) => {
                    if h.iter()
                        .any(|s| s.len == 0 || s.start.checked_add(s.len).is_none())
                    {
                        return Err(NnError::Invalid(
                            "the architecture has an empty output head".into(),
                        ));
                    }
                    Block::Head(h.clone())
                }
                BlockSpec::Dropout(p) if !(0.0..1.0).contains(p) => {
                    return Err(NnError::Invalid(format!(
                        "the architecture has a dropout rate of {p}, outside [0, 1)"
                    )));
                }
                BlockSpec::Dropout(p) => Block::Dropout(*p),
                BlockSpec::Pad { before, after } => Block::Pad {
                    before: *before,
                    after: *after,
                },
                BlockSpec::LabelMaps {
                    start,
                    classes,
                    pixels,
                } => Block::LabelMaps {
                    start: *start,
                    classes: *classes,
                    pixels: *pixels,
                },
            })
        })
        .collect()
}

/// The names of a network's parameters, in [`Net::params`] order.
pub fn param_names(spec: &[BlockSpec]) -> Vec<String> {
    fn walk(bs: &[BlockSpec], prefix: &str, out: &mut Vec<String>) {
        for (i, b) in bs.iter().enumerate() {
            let p = format!("{prefix}{i}");
            match b {
                BlockSpec::Linear { bias, .. } => {
                    out.push(format!("{p}.linear.weight"));
                    if *bias {
                        out.push(format!("{p}.linear.bias"));
                    }
                }
                BlockSpec::Conv { bias, .. } => {
                    out.push(format!("{p}.conv.weight"));
                    if *bias {
                        out.push(format!("{p}.conv.bias"));
                    }
                }
                BlockSpec::LayerNorm { .. } => {
                    out.push(format!("{p}.layer_norm.gamma"));
                    out.push(format!("{p}.layer_norm.beta"));
                }
                BlockSpec::Residual(inner) => walk(inner, &format!("{p}.residual."), out),
                BlockSpec::Act(_)
                | BlockSpec::Head(_)
                | BlockSpec::Dropout(_)
                | BlockSpec::Pad { .. }
                | BlockSpec::LabelMaps { .. } => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(spec, "", &mut out);
    out
}

/// The tensors of a file in [`Net::params`] order: by name when the file names them by
/// layer (`prefix` + [`param_names`]); files of the first format, which numbered them by
/// position (`prefix` + `000`, `001`, …), by number.
pub fn ordered_params(
    spec: &[BlockSpec],
    mut tensors: Vec<(String, Tensor)>,
    prefix: &str,
) -> Result<Vec<Tensor>> {
    let positional = tensors.iter().all(|(k, _)| {
        k.strip_prefix(prefix)
            .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
    });
    if positional {
        tensors.sort_by(|a, b| a.0.cmp(&b.0));
        return Ok(tensors.into_iter().map(|(_, t)| t).collect());
    }
    let mut by_name: std::collections::HashMap<String, Tensor> = tensors.into_iter().collect();
    let names = param_names(spec);
    let mut out = Vec::with_capacity(names.len());
    for n in &names {
        let key = format!("{prefix}{n}");
        out.push(by_name.remove(&key).ok_or_else(|| {
            NnError::Invalid(format!(
                "the weight '{key}' the architecture needs is missing"
            ))
        })?);
    }
    if let Some(extra) = by_name.keys().next() {
        return Err(NnError::Invalid(format!(
            "the file holds a weight '{extra}' that the architecture does not use"
        )));
    }
    Ok(out)
}

/// `prefix` + name → tensor for every parameter of `net`, for writing a file.
pub fn named_params(net: &Net, prefix: &str) -> Result<Vec<(String, Tensor)>> {
    let names = param_names(&net.spec()?);
    let params = net.params();
    if names.len() != params.len() {
        return Err(NnError::Invalid(
            "parameter names and parameters differ".into(),
        ));
    }
    Ok(names
        .into_iter()
        .zip(params)
        .map(|(n, p)| (format!("{prefix}{n}"), p.as_tensor().clone()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::layers::mlp;
    use rand::SeedableRng;

    fn net() -> Net {
        let dev = Device::Cpu;
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let mut blocks = vec![Block::Residual(
            mlp(&[3, 3], Act::Tanh, &dev, &mut rng).unwrap(),
        )];
        blocks.extend(mlp(&[3, 4, 2], Act::Tanh, &dev, &mut rng).unwrap());
        Net::new(blocks, &dev)
    }

    fn values(ts: &[Tensor]) -> Vec<Vec<f32>> {
        ts.iter()
            .map(|t| t.flatten_all().unwrap().to_vec1().unwrap())
            .collect()
    }

    #[test]
    fn names_follow_the_layers_and_both_formats_load_in_order() {
        let n = net();
        let spec = n.spec().unwrap();
        assert_eq!(
            param_names(&spec),
            [
                "0.residual.0.linear.weight",
                "0.residual.0.linear.bias",
                "1.linear.weight",
                "1.linear.bias",
                "3.linear.weight",
                "3.linear.bias"
            ]
        );
        let want: Vec<Tensor> = n.params().iter().map(|p| p.as_tensor().clone()).collect();
        // Named, in any order.
        let mut named = named_params(&n, "g.").unwrap();
        named.reverse();
        let got = ordered_params(&spec, named, "g.").unwrap();
        assert_eq!(values(&got), values(&want));
        // The first format: numbered by position.
        let numbered: Vec<(String, Tensor)> = want
            .iter()
            .enumerate()
            .rev()
            .map(|(i, t)| (format!("g.{i:03}"), t.clone()))
            .collect();
        let got = ordered_params(&spec, numbered, "g.").unwrap();
        assert_eq!(values(&got), values(&want));
        // A named file missing a weight is refused, naming it.
        let mut named = named_params(&n, "g.").unwrap();
        named.retain(|(k, _)| k != "g.1.linear.bias");
        let e = ordered_params(&spec, named, "g.").unwrap_err().to_string();
        assert!(e.contains("g.1.linear.bias"), "{e}");
    }
}
