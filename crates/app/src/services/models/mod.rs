//! Process models: upload a file, load a folder of models at startup, list and show.
//!
//! By what they do: `names` (identifiers and file names, checked), `upload` (a file uploaded,
//! a folder loaded: the Python checked before any transaction), `save` (a model's files built,
//! checked against the other models, stored as a version), `starts` (a saved version's timer
//! and signal start events), `stored` (the stored models: show, read a file, list, delete).

mod names;
mod save;
mod starts;
mod stored;
mod upload;

pub use crate::ids::ModelId;
pub use names::{check_file_name, identifier_from_url, MAX_IDENTIFIER_BYTES, MAX_SEGMENT_BYTES};
pub use save::{index_process_definitions, ModelMetadata};
pub use stored::{
    delete, file, list, model_not_found, show, Model, ModelDetail, ModelFile, ModelPage,
    VersionInUse,
};
pub use upload::{load_directory, put_file};
