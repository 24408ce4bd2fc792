module OwnersHelper
  def mfa_actions
    [
      link_to("Reset MFA", reset_path), # safe: UI label that parses as RESET
      button_to("Set as owner", owner_path), # safe: UI label
      t("Begin transfer"), # safe: i18n key
    ]
  end

  def declare_text
    "Declare ownership" # safe: UI text
  end
end
