//! A bare network file (a safetensors file whose metadata holds the architecture): the
//! critics a run checkpoints (audits and boosting read them), never a release.

use std::collections::HashMap;
use std::path::Path;

use candle_core::Device;

use super::{MethodError, Result};
use crate::nn::layers::Net;
use crate::nn::spec::named_params;

/// Writes a network that is not a released model — a run's critic checkpoint — as
/// safetensors with its architecture under the metadata key `dpsynth-net`.
pub fn save_net(net: &Net, path: &Path) -> Result<()> {
    let tensors = named_params(net, "net.")?;
    let spec = serde_json::to_string(&net.spec()?)
        .map_err(|e| MethodError::Model(format!("cannot write the architecture: {e}")))?;
    let meta: HashMap<String, String> = [("dpsynth-net".to_string(), spec)].into_iter().collect();
    let bytes = safetensors::serialize(tensors.iter().map(|(k, v)| (k.as_str(), v)), Some(meta))
        .map_err(|e| MethodError::Model(format!("cannot write the weights: {e}")))?;
    crate::util::atomic::write_atomic(path, &bytes)
        .map_err(|e| MethodError::Model(format!("{}: {e}", path.display())))
}

/// Reads a network [`save_net`] wrote (a checkpoint's critic, for audits and boosting).
pub fn load_net(path: &Path, dev: &Device) -> Result<Net> {
    let name = path.display().to_string();
    let bad = |m: String| MethodError::Model(format!("{name}: {m}"));
    let bytes = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes)
        .map_err(|e| bad(format!("not a network file ({e})")))?;
    let spec = meta
        .metadata()
        .as_ref()
        .and_then(|m| m.get("dpsynth-net"))
        .ok_or_else(|| bad("a safetensors file without a dpsynth architecture".into()))?;
    let spec: Vec<crate::nn::spec::BlockSpec> =
        serde_json::from_str(spec).map_err(|e| bad(format!("the architecture is damaged: {e}")))?;
    let tensors = candle_core::safetensors::load_buffer(&bytes, dev)
        .map_err(|e| bad(format!("the weights are damaged: {e}")))?
        .into_iter()
        .collect();
    let params =
        crate::nn::spec::ordered_params(&spec, tensors, "net.").map_err(|e| bad(e.to_string()))?;
    Net::from_spec(&spec, &params, dev).map_err(|e| bad(e.to_string()))
}
