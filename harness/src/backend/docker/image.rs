//! The images a Docker deployment needs, found in the engine or (when the
//! spec asks for it) built with [`crate::images`].
//!
//! May import: `backend` (the spec), `broker`, `images`, `error`.
use crate::backend::ClusterSpec;
use crate::broker::{BrokerExt, ClusterContext, Flavour};
use crate::error::{docker_err, is_not_found, HarnessError, Result};
use bollard::Docker;

/// Makes sure the images of `spec` (the broker's, and its storage node's where
/// the recipe has one) are in the engine: built when missing and the spec asks
/// for it, else an error naming the image.
pub(super) async fn ensure_image(docker: &Docker, spec: &ClusterSpec) -> Result<()> {
    // The storage node's image too, where the recipe has one of its own.
    let ctx = ClusterContext::for_image(spec.image.flavour, &spec.image.name);
    if let Some(image) = spec.broker.recipe().storage(&ctx).and_then(|p| p.image) {
        match docker.inspect_image(&image).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) && spec.build_missing_image => {
                crate::images::ensure_storage_image(
                    docker,
                    &crate::images::BuildOptions::default(),
                    &spec.image_progress,
                )
                .await?;
            }
            Err(e) if is_not_found(&e) => {
                return Err(HarnessError::ImageMissing {
                    image,
                    broker: spec.broker.to_string(),
                })
            }
            Err(e) => return Err(docker_err(format!("inspecting image {image}"))(e)),
        }
    }
    match docker.inspect_image(&spec.image.name).await {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => {
            if spec.build_missing_image && spec.image.flavour == Flavour::Gauntlet {
                let opts = crate::images::BuildOptions::default();
                crate::images::ensure_images(docker, &[spec.broker], &opts, &spec.image_progress)
                    .await
                    .map(|_| ())
            } else {
                Err(HarnessError::ImageMissing {
                    image: spec.image.name.clone(),
                    broker: spec.broker.to_string(),
                })
            }
        }
        Err(e) => Err(docker_err(format!("inspecting image {}", spec.image.name))(
            e,
        )),
    }
}
