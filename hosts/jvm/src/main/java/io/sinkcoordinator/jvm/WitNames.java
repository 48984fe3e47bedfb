package io.sinkcoordinator.jvm;

import java.util.Locale;

/**
 * The WIT names of the binding's enums ({@link FinalCommitMode}, {@link RecoveryMode}, {@link
 * TableFormat}, {@link Lifecycle}): a WIT enum case is kebab-case, its Java constant the same
 * words in upper snake case ({@code on-end-input} is {@code ON_END_INPUT}).
 */
final class WitNames {
  private WitNames() {}

  /** The WIT name of a constant. */
  static String of(Enum<?> constant) {
    return constant.name().toLowerCase(Locale.ROOT).replace('_', '-');
  }

  /** The constant of {@code values} whose WIT name is {@code name}, or null. */
  static <E extends Enum<E>> E lookup(E[] values, String name) {
    for (E e : values) {
      if (of(e).equals(name)) {
        return e;
      }
    }
    return null;
  }
}
