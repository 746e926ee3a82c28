"""Response bodies of image description (R-PARSE-6): the vision-model catalog and a document's record."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from sluice.llm.catalog import ChatCatalogModel


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class VisionModelOut(_Body):
    provider: str
    model: str
    max_image_side: int = Field(description="Images are downscaled to at most this many pixels on their longest side.")
    max_image_bytes: int = Field(description="The most bytes one image is sent as.")
    description: str


class VisionModelsOut(_Body):
    models: list[VisionModelOut] = Field(
        description="The models a collection's ingestion_config.image_description may name (vision-capable only).")


def vision_models_view(models: Sequence[ChatCatalogModel]) -> VisionModelsOut:
    return VisionModelsOut(models=[
        VisionModelOut(provider=m.provider, model=m.model, max_image_side=m.max_image_side,
                       max_image_bytes=m.max_image_bytes, description=m.description)
        for m in models if m.vision
    ])


class ImageDescriptionOut(_Body):
    described: int = Field(description="Images of the document the vision model described.")
    undescribed: int = Field(description="Images left undescribed (failed, refused, over the cap, out of time).")
    note: str | None = Field(description="Why images went undescribed, e.g. '1 of 2 images was not described: …'.")


def image_description_view(described: int | None, undescribed: int | None, note: str | None
                           ) -> ImageDescriptionOut | None:
    if described is None and undescribed is None:
        return None
    return ImageDescriptionOut(described=described or 0, undescribed=undescribed or 0, note=note)
