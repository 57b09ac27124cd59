package dev.sema.spring.readme;

/** A partner's quote. */
public record Quote(String sku, long cents) {
}
