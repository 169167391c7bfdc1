"""BlueOS's own view of Periscope, as pydantic v2 models with the fields, types and optionality of
BlueOS's code (written from bluerobotics/BlueOS core/services/helper/main.py `ServiceMetadata`,
core/services/kraken/manifest/models.py `ExtensionVersion`, and the label reading of
bluerobotics/BlueOS-Extensions-Repository blueos_repository/extension/extension.py), so a label or a
field BlueOS would reject fails here. Reads {"labels": {...}, "register_service": {...}} on stdin."""
import json
import sys
from enum import Enum
from typing import Any, Dict, List, Optional

from pydantic import BaseModel, Field


class ServiceMetadata(BaseModel):  # the helper's reading of GET /register_service
    name: str
    description: str
    icon: str
    company: str
    version: str
    webpage: str
    api: str
    route: Optional[str] = Field(default=None)
    new_page: Optional[bool] = Field(default=None)
    extra_query: Optional[str] = Field(default=None)
    avoid_iframes: Optional[bool] = Field(default=None)
    sanitized_name: Optional[str] = Field(default=None)
    works_in_relative_paths: Optional[bool] = Field(default=None)
    extras: Optional[Dict[str, str]] = Field(default=None)


class ExtensionType(str, Enum):
    DEVICE_INTEGRATION = "device-integration"
    EXAMPLE = "example"
    THEME = "theme"
    OTHER = "other"
    TOOL = "tool"
    EDUCATION = "education"


class Author(BaseModel):
    name: str
    email: str


class Company(BaseModel):
    name: str
    about: Optional[str] = None
    email: Optional[str] = None


class ExtensionVersion(BaseModel):  # the manifest entry BlueOS's extension store validates
    type: ExtensionType
    images: List[Dict[str, Any]]
    authors: List[Author]
    filter_tags: List[str]
    extra_links: Dict[str, str]
    website: Optional[str] = None
    tag: Optional[str] = None
    docs: Optional[str] = None
    readme: Optional[str] = None
    support: Optional[str] = None
    requirements: Optional[str] = None
    company: Optional[Company] = None
    permissions: Optional[Dict[str, Any]] = None


def version_from_labels(labels: Dict[str, str]) -> ExtensionVersion:
    """The labels as the extensions repository turns them into a version entry (json5 there; our labels are JSON)."""
    links = json.loads(labels.get("links", "{}"))
    docs = links.pop("docs", links.pop("documentation", labels.get("docs")))
    company_raw = labels.get("company", labels.get("maintainer"))
    permissions_raw = labels.get("permissions")
    return ExtensionVersion(
        type=labels.get("type", ExtensionType.OTHER.value),
        images=[],
        website=links.pop("website", labels.get("website")),
        docs=docs,
        support=links.pop("support", labels.get("support")),
        requirements=labels.get("requirements"),
        readme=labels.get("readme"),
        authors=json.loads(labels.get("authors", "[]")),
        company=json.loads(company_raw) if company_raw else None,
        permissions=json.loads(permissions_raw) if permissions_raw else None,
        filter_tags=json.loads(labels.get("tags", "[]")),
        extra_links=links,
    )


def main() -> int:
    given = json.load(sys.stdin)
    metadata = ServiceMetadata.model_validate(given["register_service"])
    version = version_from_labels(given["labels"])
    print(json.dumps({"works_in_relative_paths": metadata.works_in_relative_paths, "extras": metadata.extras, "authors": [a.model_dump() for a in version.authors], "type": version.type.value}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
