//! One struct per screen behind one trait, as egui's demo app does: a panel draws from the
//! state it is lent and answers with [`Command`]s, which the window applies after the
//! frame is drawn. Panels never reach into each other.

use std::path::PathBuf;

use eframe::egui;

use super::Loaded;
use super::dialogs::Dialogs;

/// What a panel asks the window to do once drawing is over.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Kinds, bounds or categories changed: the training form prices the run again.
    SchemaChanged,
    /// Open this path as the dataset (another sheet of the open workbook).
    Open(PathBuf),
    /// A run on the open dataset finished: evaluate its model and show the results.
    ShowRun {
        title: String,
        model: PathBuf,
        /// The run's settings (for the results' privacy audit).
        config: Option<Box<crate::job::RunConfig>>,
    },
    /// A linked run on the open pair was judged: the Results tab shows it.
    ShowLinked(Box<crate::gui::linked::results::Shown>),
}

/// What every panel may read or edit while it draws.
pub struct Ctx<'a> {
    /// The open dataset, if any.
    pub loaded: Option<&'a mut Loaded>,
    /// The window's file dialogs (every panel's Save/Open buttons go through them).
    pub dialogs: &'a mut Dialogs,
}

/// A screen of the window.
pub trait Panel {
    /// Draws the panel; returns what the window should do afterwards.
    fn ui(&mut self, ui: &mut egui::Ui, cx: &mut Ctx<'_>) -> Vec<Command>;

    /// Called every frame whatever tab is shown: a panel with work in a worker picks up
    /// its news here.
    fn poll(&mut self, _ctx: &egui::Context, _cx: &mut Ctx<'_>) -> Vec<Command> {
        Vec::new()
    }
}
