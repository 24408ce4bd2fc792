import * as React from "react";
import { useTranslation } from "react-i18next";

export default function Settings() {
  const { t } = useTranslation();
  return (
    <div>
      <button title={t("Reset MFA")}>{t("Reset")}</button>{/* safe: UI label */}
      <h2>{t("Set a new password")}</h2>{/* safe: UI label */}
      <p>{"Execute Selected"}</p>{/* safe: UI text */}
    </div>
  );
}
