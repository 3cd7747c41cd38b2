// The in-process CA: what the certificates it issues say.
#include "mka/net/pki.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace mka::net {
namespace {

struct X509Deleter {
  void operator()(X509* cert) const { X509_free(cert); }
};
using X509Ptr = std::unique_ptr<X509, X509Deleter>;

X509Ptr parse(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509Ptr cert(PEM_read_bio_X509(bio, nullptr, nullptr, nullptr));
  BIO_free(bio);
  return cert;
}

std::string subject(X509* cert) {
  char buffer[512];
  X509_NAME_oneline(X509_get_subject_name(cert), buffer, sizeof buffer);
  return buffer;
}

TEST(CertificateAuthorityTest, ServingCertificateIsSignedByTheCaWithServerAuth) {
  CertificateAuthority ca("test CA");
  auto leaf = ca.issue({.commonName = "webhook", .dnsNames = {"svc.ns.svc"}, .ipAddresses = {"127.0.0.1"}});
  auto caCert = parse(ca.certPem());
  auto cert = parse(leaf.certPem);
  ASSERT_TRUE(caCert && cert);
  EXPECT_EQ(X509_check_issued(caCert.get(), cert.get()), X509_V_OK);
  EXPECT_EQ(X509_check_host(cert.get(), "svc.ns.svc", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_purpose(cert.get(), X509_PURPOSE_SSL_SERVER, 0), 1);
  EXPECT_NE(X509_check_purpose(cert.get(), X509_PURPOSE_SSL_CLIENT, 0), 1);
  EXPECT_NE(leaf.keyPem.find("PRIVATE KEY"), std::string::npos);
}

TEST(CertificateAuthorityTest, ClientCertificateCarriesUserAndGroups) {
  CertificateAuthority ca;
  auto leaf = ca.issue({.commonName = "alice",
                        .organizations = {"system:masters", "team-a"},
                        .dnsNames = {},
                        .ipAddresses = {},
                        .clientAuth = true});
  auto cert = parse(leaf.certPem);
  ASSERT_TRUE(cert);
  EXPECT_EQ(subject(cert.get()), "/CN=alice/O=system:masters/O=team-a");
  EXPECT_EQ(X509_check_purpose(cert.get(), X509_PURPOSE_SSL_CLIENT, 0), 1);
  EXPECT_NE(X509_check_purpose(cert.get(), X509_PURPOSE_SSL_SERVER, 0), 1);
}

TEST(CertificateAuthorityTest, EachCaIsDistinct) {
  CertificateAuthority a, b;
  auto leaf = a.issue();
  EXPECT_NE(X509_check_issued(parse(b.certPem()).get(), parse(leaf.certPem).get()), X509_V_OK);
  EXPECT_NE(a.certPem(), b.certPem());
}

}  // namespace
}  // namespace mka::net
