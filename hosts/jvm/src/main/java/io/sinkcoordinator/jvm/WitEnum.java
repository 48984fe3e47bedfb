package io.sinkcoordinator.jvm;

import java.util.Locale;

/**
 * An enum of the binding that mirrors a WIT enum ({@link FinalCommitMode}, {@link RecoveryMode},
 * {@link TableFormat}, {@link Lifecycle}): a WIT enum case is kebab-case, its Java constant the
 * same words in upper snake case ({@code on-end-input} is {@code ON_END_INPUT}). Public, so that
 * {@link #witName} is callable (also reflectively) on each enum; sealed, because only these enums
 * have WIT names.
 */
public sealed interface WitEnum permits FinalCommitMode, RecoveryMode, TableFormat, Lifecycle {
  /** The constant's Java name (its enum's {@link Enum#name}). */
  String name();

  /** The WIT name ({@code on-end-input}, {@code running}, ...). */
  default String witName() {
    return name().toLowerCase(Locale.ROOT).replace('_', '-');
  }
}
