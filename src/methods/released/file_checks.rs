//! What a model file must pass before anything samples from it: the header's checksum and
//! format, every weight finite, the graphical model's and the mixture's tensors matching
//! what the header describes, and the generator's shapes agreeing with the header. Each
//! refusal says what is wrong with the file; a file that passes can be sampled without a
//! panic or an allocation its header could inflate.

use candle_core::Tensor;

use super::{
    CHECKSUM_KEY, HEADER_KEY, MODEL_FORMAT, MixtureSet, ModelHeader, PGM_PREFIX, checksum,
};
use crate::data::encode::Encoding;
use crate::methods::pgm::{GraphicalHeader, GraphicalModel};
use crate::nn::layers::Net;
use crate::nn::spec::BlockSpec;

/// A graphical model from its header part and the file's `pgm.*` tensors, checked.
pub(super) fn graphical_of(
    header: &GraphicalHeader,
    tensors: &[(String, Tensor)],
) -> std::result::Result<GraphicalModel, String> {
    let m = header.cliques.len();
    if tensors.len() != m {
        return Err(format!(
            "the file holds {} tensors for a graphical model of {m} nodes",
            tensors.len()
        ));
    }
    let mut tables = Vec::with_capacity(m);
    for i in 0..m {
        let name = format!("{PGM_PREFIX}{i}");
        let t = tensors
            .iter()
            .find(|(k, _)| *k == name)
            .ok_or_else(|| format!("the table '{name}' is missing"))?;
        let v =
            t.1.flatten_all()
                .and_then(|v| v.to_dtype(candle_core::DType::F32))
                .and_then(|v| v.to_vec1::<f32>())
                .map_err(|e| format!("the table '{name}' is damaged: {e}"))?;
        tables.push(v);
    }
    let g = GraphicalModel {
        header: header.clone(),
        tables,
    };
    g.check()?;
    Ok(g)
}

/// Checks that the header's latent width, conditioning and schema agree with the network
/// the file holds, by one forward pass on a zero input: a header edited to declare a huge
/// latent width must not make sampling allocate for it.
pub(super) fn check_shapes(
    header: &ModelHeader,
    generator: &Net,
) -> std::result::Result<(), String> {
    fn first_input(spec: &[BlockSpec]) -> Option<usize> {
        spec.iter().find_map(|b| match b {
            BlockSpec::Linear { inp, .. } => Some(*inp),
            BlockSpec::Residual(inner) => first_input(inner),
            _ => None,
        })
    }
    let classes = header.conditioning.as_ref().map_or(0, |c| c.classes);
    let input = header
        .latent_dim
        .checked_add(classes)
        .ok_or("the header's latent width is out of range")?;
    if first_input(&header.generator) != Some(input) {
        return Err(format!(
            "the header's latent width ({} + {classes} condition columns) does not match the generator's input; the file is damaged",
            header.latent_dim
        ));
    }
    let width = Encoding::new(&header.schema)
        .map_err(|e| e.to_string())?
        .width;
    if width == 0 {
        return Err("the schema encodes no columns: there is nothing to sample".into());
    }
    let z = Tensor::zeros((1, input), candle_core::DType::F32, &generator.device)
        .map_err(|e| e.to_string())?;
    let out = generator
        .forward(&z, None)
        .map_err(|e| format!("the generator cannot run: {e}"))?;
    if out.dims() != [1, width] {
        return Err(format!(
            "the generator writes rows of shape {:?} but the schema encodes {width} columns; the file is damaged",
            out.dims()
        ));
    }
    let finite = out
        .flatten_all()
        .and_then(|v| v.to_vec1::<f32>())
        .map(|v| v.iter().all(|x| x.is_finite()));
    if !matches!(finite, Ok(true)) {
        return Err(
            "the generator writes values that are not finite numbers; the file is damaged".into(),
        );
    }
    Ok(())
}

/// A model file's header, checked: a dpsynth header, the checksum over header and weights
/// (files written before it existed have none), the format, and a conditioning that fits
/// the schema.
pub(super) fn read_header(bytes: &[u8]) -> std::result::Result<ModelHeader, String> {
    let (_, meta) = safetensors::SafeTensors::read_metadata(bytes)
        .map_err(|e| format!("not a dpsynth model file ({e})"))?;
    let header = meta
        .metadata()
        .as_ref()
        .and_then(|m| m.get(HEADER_KEY))
        .ok_or("a safetensors file without a dpsynth header (not a released model)")?;
    if let Some(sum) = meta.metadata().as_ref().and_then(|m| m.get(CHECKSUM_KEY)) {
        let file = safetensors::SafeTensors::deserialize(bytes)
            .map_err(|e| format!("the weights are damaged: {e}"))?;
        if checksum(header, file.tensors().into_iter()) != *sum {
            return Err("the file is damaged or was altered after it was written: its checksum does not match its header and weights".into());
        }
    }
    let header: ModelHeader =
        serde_json::from_str(header).map_err(|e| format!("the header is damaged: {e}"))?;
    if header.format != MODEL_FORMAT {
        return Err(format!("format '{}' is not {MODEL_FORMAT}", header.format));
    }
    if let Some(c) = &header.conditioning {
        c.check(encoded_width(&header)?)?;
    }
    Ok(header)
}

/// The encoded width of the header's schema.
pub(super) fn encoded_width(header: &ModelHeader) -> std::result::Result<usize, String> {
    Ok(Encoding::new(&header.schema)
        .map_err(|e| e.to_string())?
        .width)
}

/// Refuses weights that are not finite numbers: the model would write nonsense rows.
pub(super) fn check_finite(tensors: &[(String, Tensor)]) -> std::result::Result<(), String> {
    for (name, t) in tensors {
        let finite = t
            .flatten_all()
            .and_then(|v| v.to_dtype(candle_core::DType::F32))
            .and_then(|v| v.to_vec1::<f32>())
            .map(|v| v.iter().all(|x| x.is_finite()));
        if !matches!(finite, Ok(true)) {
            return Err(format!(
                "the weight '{name}' holds values that are not finite numbers (NaN or infinite): the model would write nonsense rows"
            ));
        }
    }
    Ok(())
}

/// The boosted mixture the header describes, from its tensors, checked against the
/// schema; refused where tensors and header disagree.
pub(super) fn mixture_of(
    header: &ModelHeader,
    mixture_tensors: &[(String, Tensor)],
) -> std::result::Result<Option<MixtureSet>, String> {
    if header.mixture.is_none() {
        return match mixture_tensors.is_empty() {
            true => Ok(None),
            false => Err("it holds a mixture its header does not describe".into()),
        };
    }
    let get = |name: &str| -> std::result::Result<Vec<f32>, String> {
        let t = mixture_tensors
            .iter()
            .find(|(k, _)| k == name)
            .ok_or_else(|| format!("the mixture tensor '{name}' is missing"))?;
        t.1.flatten_all()
            .and_then(|v| v.to_dtype(candle_core::DType::F32))
            .and_then(|v| v.to_vec1::<f32>())
            .map_err(|e| e.to_string())
    };
    let wide = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<f64>>();
    let m = MixtureSet {
        rows: get("mixture.rows")?,
        weights: wide(get("mixture.weights")?),
        drs_weights: wide(get("mixture.drs_weights")?),
    };
    m.check(encoded_width(header)?)?;
    Ok(Some(m))
}
