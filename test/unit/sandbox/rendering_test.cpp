// Output negotiation from the Accept header, and the PartialObjectMetadata renderings.
#include "rendering.h"

#include <gtest/gtest.h>

#include "mka/sandbox/api_error.h"
#include "support/thrown.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;

TEST(RenderingTest, TheFirstItemTheSandboxCanServeWins) {
  // kubectl get
  EXPECT_EQ(renderingFor("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
                         "g=meta.k8s.io,application/json"),
            Rendering::Table);
  // client-go's metadata client: protobuf first, which the sandbox does not write
  EXPECT_EQ(renderingFor("application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,"
                         "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"),
            Rendering::PartialObjectMetadata);
  EXPECT_EQ(renderingFor("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"),
            Rendering::PartialObjectMetadataList);
  // Order, not position of the parameters; spaces around them are allowed.
  EXPECT_EQ(renderingFor("application/json ; v=v1 ; g=meta.k8s.io ; as=PartialObjectMetadata"),
            Rendering::PartialObjectMetadata);
  EXPECT_EQ(renderingFor("application/json,application/json;as=Table;v=v1;g=meta.k8s.io"), Rendering::Object);
}

TEST(RenderingTest, WhatCannotBeServedIsPassedOverAndTheObjectIsTheLastResort) {
  EXPECT_EQ(renderingFor("application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json;as=Table;v=v1;"
                         "g=meta.k8s.io"),
            Rendering::Table);
  EXPECT_EQ(renderingFor("application/json;as=Table;v=v1beta1;g=meta.k8s.io"), Rendering::Object);
  EXPECT_EQ(renderingFor("application/json;as=PartialObjectMetadata;g=example.com;v=v1"), Rendering::Object);
  EXPECT_EQ(renderingFor("application/json;as=Unknown;g=meta.k8s.io;v=v1"), Rendering::Object);
  EXPECT_EQ(renderingFor("application/yaml;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,*/*"), Rendering::Object);
  EXPECT_EQ(renderingFor("application/json"), Rendering::Object);
  EXPECT_EQ(renderingFor(""), Rendering::Object);
}

const json kObject = json::parse(R"({
  "apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
  "metadata": {"name": "a", "namespace": "default", "resourceVersion": "7", "labels": {"x": "y"}},
  "spec": {"pipelineRef": {"name": "build"}}, "status": {"conditions": []}
})");

TEST(RenderingTest, PartialObjectMetadataKeepsTheMetadataOnly) {
  EXPECT_EQ(partialObjectMetadata(kObject),
            json::parse(R"({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                            "metadata": {"name": "a", "namespace": "default", "resourceVersion": "7",
                                         "labels": {"x": "y"}}})"));
  const json list = {{"apiVersion", "tekton.dev/v1"},
                     {"kind", "PipelineRunList"},
                     {"metadata", {{"resourceVersion", "9"}}},
                     {"items", json::array({kObject})}};
  const auto partial = partialObjectMetadataList(list);
  EXPECT_EQ(partial.at("kind"), "PartialObjectMetadataList");
  EXPECT_EQ(partial.at("apiVersion"), "meta.k8s.io/v1");
  EXPECT_EQ(partial.at("metadata"), json({{"resourceVersion", "9"}}));
  ASSERT_EQ(partial.at("items").size(), 1U);
  EXPECT_EQ(partial.at("items")[0], partialObjectMetadata(kObject));
}

TEST(RenderingTest, TheTextIsTheObjectsMetadataWithoutACopy) {
  EXPECT_EQ(json::parse(partialObjectMetadataText(kObject)), partialObjectMetadata(kObject));
  EXPECT_EQ(json::parse(partialObjectMetadataText(json::object())),
            json::parse(R"({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {}})"));
}

TEST(RenderingTest, AListAndOneObjectAreNotInterchangeable) {
  EXPECT_NO_THROW(checkRenderable(Rendering::PartialObjectMetadata, false, "PipelineRun"));
  EXPECT_NO_THROW(checkRenderable(Rendering::PartialObjectMetadataList, true, "PipelineRunList"));
  EXPECT_NO_THROW(checkRenderable(Rendering::Object, true, "PipelineRunList"));
  EXPECT_NO_THROW(checkRenderable(Rendering::Table, false, "PipelineRun"));
  const auto one = mka::test::thrownBy<ApiError>(
      [&] { checkRenderable(Rendering::PartialObjectMetadataList, false, "PipelineRun"); });
  EXPECT_EQ(one.code(), 406);
  EXPECT_EQ(one.reason(), "NotAcceptable");
  EXPECT_EQ(std::string(one.what()),
            "you requested PartialObjectMetadataList, but the requested object is not a list (PipelineRun)");
  const auto many = mka::test::thrownBy<ApiError>(
      [&] { checkRenderable(Rendering::PartialObjectMetadata, true, "PipelineRunList"); });
  EXPECT_EQ(many.code(), 406);
  EXPECT_EQ(std::string(many.what()),
            "you requested PartialObjectMetadata, but the requested object is a list (PipelineRunList)");
}

}  // namespace
}  // namespace mka::sandbox
