//! hotspot's replay side: reads captures and folds them into profiles.
