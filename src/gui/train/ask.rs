//! The question Train asks before a run the cost preview calls hopeless (the private
//! domain estimate would drop most of the table): spending budget on it needs a yes.

use eframe::egui;

/// A pending question, and what the user answered.
#[derive(Default)]
pub(super) struct Ask {
    /// The preview's sentence, while the question shows.
    pending: Option<String>,
}

/// What the user chose.
pub(super) enum Answer {
    TrainAnyway,
    NotNow,
}

impl Ask {
    pub fn open(&mut self, why: String) {
        self.pending = Some(why);
    }

    pub fn close(&mut self) {
        self.pending = None;
    }

    /// Shows the question while it is open; the answer once given (the question closes).
    pub fn ui(&mut self, ui: &mut egui::Ui) -> Option<Answer> {
        let why = self.pending.clone()?;
        let mut answer = None;
        ui.group(|ui| {
            ui.colored_label(ui.visuals().warn_fg_color, why);
            ui.horizontal(|ui| {
                if ui
                    .button("Train anyway")
                    .on_hover_text("Spend the budget on this run as it stands")
                    .clicked()
                {
                    answer = Some(Answer::TrainAnyway);
                }
                if ui
                    .button("Not now")
                    .on_hover_text("Give the columns' domains in the Data tab first")
                    .clicked()
                {
                    answer = Some(Answer::NotNow);
                }
            });
        });
        if answer.is_some() {
            self.pending = None;
        }
        answer
    }
}
